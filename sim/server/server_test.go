package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness"
	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/lab"
	"github.com/connlab/connlab/sim/web"
	"github.com/gorilla/websocket"
)

const labsDir = "../../labs"

// msg is any server message, decoded loosely.
type msg struct {
	Type      string                       `json:"type"`
	ID        string                       `json:"id"`
	Field     string                       `json:"field"`
	Message   string                       `json:"message"`
	Position  int                          `json:"position"`
	Mode      string                       `json:"mode"`
	Block     string                       `json:"block"`
	Title     string                       `json:"title"`
	Variant   string                       `json:"variant"`
	Events    []json.RawMessage            `json:"events"`
	ServerMS  float64                      `json:"server_ms"`
	Summary   *sim.Summary                 `json:"summary"`
	Sent      int                          `json:"sent"`
	Count     int                          `json:"count"`
	Variants  []runsvc.DoneVariant         `json:"variants"`
	Params    map[string]map[string]string `json:"params"`
	Checks    []lab.Check                  `json:"checks"`
	ElapsedMS float64                      `json:"elapsed_ms"`
}

type testServer struct {
	*Server
	ts  *httptest.Server
	url string // ws://…/ws
}

func newTestServer(t testing.TB, opt Options) *testServer {
	t.Helper()
	if opt.Labs == nil {
		opt.Labs = []string{labsDir}
	}
	if opt.Logf == nil {
		opt.Logf = t.Logf
	}
	s := New(opt)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Close()
		ts.Close()
	})
	return &testServer{Server: s, ts: ts, url: "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws"}
}

func (s *testServer) dial(t testing.TB) *websocket.Conn {
	t.Helper()
	h := http.Header{"Origin": {s.ts.URL}}
	c, resp, err := websocket.DefaultDialer.Dial(s.url, h)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t testing.TB, c *websocket.Conn, v any) {
	t.Helper()
	var data []byte
	switch x := v.(type) {
	case string:
		data = []byte(x)
	default:
		data, _ = json.Marshal(v)
	}
	if err := c.WriteMessage(websocket.TextMessage, data); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, c *websocket.Conn) msg {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, data, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m msg
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("bad message %s: %v", data, err)
	}
	return m
}

// until reads messages until one of type typ for run id, returning it and
// every message before it.
func until(t testing.TB, c *websocket.Conn, id, typ string) (msg, []msg) {
	t.Helper()
	var seen []msg
	for {
		m := read(t, c)
		if m.ID == id && m.Type == typ {
			return m, seen
		}
		if m.Type == "error" && typ != "error" {
			t.Fatalf("waiting for %s of %q: error %+v", typ, id, m)
		}
		seen = append(seen, m)
	}
}

// runReq is the run message the tests send: the page's (runsvc.Run).
type runReq = runsvc.Run

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A model run streams the numbers `sim run --json` prints: the done
// summaries and checks equal lab.Run's for the same block, each variant's
// stats follow its events, and the events are the model's own.
func TestModelRunMatchesSimRun(t *testing.T) {
	s := newTestServer(t, Options{})
	c := s.dial(t)
	cases := []struct{ lab, block string }{
		{"php-persistent-share", "across-requests"},
		{"php-persistent-share", "within-script"},
		{"php-persistent-pools", "workers"},
		{"php-persistent-pools", "idle"},
		{"php-persistent-pools", "option-sets"},
		{"connection-pool", "pool"},
	}
	for i, tc := range cases {
		l, err := lab.ReadFile(filepath.Join(labsDir, tc.lab+".md"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := l.Run(context.Background(), []string{tc.block}, lab.RunOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		// Events as the model emits them, to compare with the stream.
		wantEvents := map[string][]string{}
		b, _ := l.Block(tc.block)
		b.RunVariants(context.Background(), lab.RunOptions{Seed: 1, Sink: func(_, v string, e *sim.Event) {
			wantEvents[v] = append(wantEvents[v], sansZeros(t, e.AppendJSON(nil)))
		}})

		id := fmt.Sprint("r", i)
		send(t, c, runReq{Type: "run", ID: id, Lab: tc.lab, Block: tc.block, Mode: "model"})
		started, _ := until(t, c, id, "started")
		if started.Block != tc.block || started.Mode != "model" || len(started.Variants) != len(want[0].Variants) {
			t.Fatalf("%s: started %+v", tc.block, started)
		}
		done, seen := until(t, c, id, "done")
		got := map[string][]string{}
		statsSeen := map[string]bool{}
		for _, m := range seen {
			switch m.Type {
			case "events":
				if statsSeen[m.Variant] {
					t.Errorf("%s/%s: events after the variant's stats", tc.block, m.Variant)
				}
				if len(m.Events) > DefaultLimits.BatchEvents {
					t.Errorf("batch of %d events", len(m.Events))
				}
				for _, e := range m.Events {
					got[m.Variant] = append(got[m.Variant], sansZeros(t, e))
				}
			case "stats":
				statsSeen[m.Variant] = true
			case "truncated":
				if m.Sent != DefaultLimits.ModelEvents || len(wantEvents[m.Variant]) <= m.Sent {
					t.Errorf("%s: %+v", tc.block, m)
				}
				wantEvents[m.Variant] = wantEvents[m.Variant][:m.Sent]
			case "dropped":
				t.Errorf("%s: unexpected %+v", tc.block, m)
			}
		}
		if !reflect.DeepEqual(got, wantEvents) {
			t.Errorf("%s: streamed events differ from the model's (%d variants vs %d)", tc.block, len(got), len(wantEvents))
		}
		if len(done.Variants) != len(want[0].Variants) {
			t.Fatalf("%s: done has %d variants, want %d", tc.block, len(done.Variants), len(want[0].Variants))
		}
		for j, v := range want[0].Variants {
			dv := done.Variants[j]
			if dv.Name != v.Name || dv.Label != v.Label || dv.Error != v.Error {
				t.Errorf("%s: variant %d is %q/%q/%q, want %q/%q/%q", tc.block, j, dv.Name, dv.Label, dv.Error, v.Name, v.Label, v.Error)
			}
			if asJSON(dv.Summary) != asJSON(v.Summary) {
				t.Errorf("%s/%s: summary\n got %s\nwant %s", tc.block, v.Name, asJSON(dv.Summary), asJSON(v.Summary))
			}
			if v.Summary != nil && !statsSeen[v.Name] {
				t.Errorf("%s/%s: no stats", tc.block, v.Name)
			}
		}
		if asJSON(done.Checks) != asJSON(want[0].Checks) {
			t.Errorf("%s: checks\n got %s\nwant %s", tc.block, asJSON(done.Checks), asJSON(want[0].Checks))
		}
		if len(want[0].Checks) > 0 && len(done.Checks) == 0 {
			t.Errorf("%s: no checks", tc.block)
		}
	}
}

// sansZeros re-encodes an event without the fields whose value is false,
// zero or empty: the stream leaves them out (AppendCompactJSON), sim run
// --events writes them (AppendJSON), and a reader takes them as zero.
func sansZeros(t *testing.T, raw []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("event %s: %v", raw, err)
	}
	for k, v := range m {
		if v == false || v == 0.0 || v == "" {
			delete(m, k)
		}
	}
	out, _ := json.Marshal(m)
	return string(out)
}

// Params change the run as `sim run --set` does; the expectations are not
// checked then, and started reports the effective scenario.
func TestModelRunParams(t *testing.T) {
	s := newTestServer(t, Options{})
	c := s.dial(t)
	seed := uint64(7)
	send(t, c, runReq{Type: "run", ID: "p", Lab: "php-persistent-pools", Block: "idle", Params: map[string]any{"pause": "60s"}, Variants: []string{"pause-80s"}, Seed: &seed})
	started, _ := until(t, c, "p", "started")
	if len(started.Variants) != 1 || started.Params["pause-80s"]["pause"] != "60s" {
		t.Fatalf("started %+v", started)
	}
	done, _ := until(t, c, "p", "done")
	l, _ := lab.ReadFile(filepath.Join(labsDir, "php-persistent-pools.md"))
	set, _ := lab.ParseSetting("pause=60s")
	want, _ := l.Run(context.Background(), []string{"idle"}, lab.RunOptions{Seed: 7, Set: []lab.Setting{set}})
	if len(done.Variants) != 1 || asJSON(done.Variants[0].Summary) != asJSON(want[0].Variants[0].Summary) {
		t.Errorf("done %s, want %s", asJSON(done.Variants), asJSON(want[0].Variants[0].Summary))
	}
	if len(done.Checks) != 0 {
		t.Errorf("checks with params: %v", done.Checks)
	}
}

// TestHugeThreadsRun: the probe's run message (workers and threads each
// within their limits, their product 10^8 thread slots) once took sim
// serve from 25 MB to 949 MB and ran on after its client left. Twice over,
// it now allocates little and a normal run after it is answered.
func TestHugeThreadsRun(t *testing.T) {
	s := newTestServer(t, Options{})
	c := s.dial(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, id := range []string{"h1", "h2"} {
		send(t, c, runReq{Type: "run", ID: id, Lab: "idle-timeouts", Block: "race",
			Params: map[string]any{"requests": 1, "workers": 1000, "threads": 100000}})
	}
	for done := 0; done < 2; {
		if m := read(t, c); m.Type == "done" {
			done++
		} else if m.Type == "error" {
			t.Fatalf("error %+v", m)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 200<<20 {
		t.Errorf("two runs of 1,000 workers × 100,000 threads allocated %d MB", got>>20)
	}
	send(t, c, runReq{Type: "run", ID: "n", Lab: "idle-timeouts", Block: "race", Params: map[string]any{"requests": 20}})
	if done, _ := until(t, c, "n", "done"); len(done.Variants) == 0 {
		t.Errorf("a normal run after them: done %+v", done)
	}
}

// Model mode streams at most ModelEvents events per variant, then says so;
// the summary still counts every request.
func TestModelRunTruncated(t *testing.T) {
	s := newTestServer(t, Options{Limits: Limits{Limits: runsvc.Limits{ModelEvents: 1000}}})
	c := s.dial(t)
	send(t, c, runReq{Type: "run", ID: "t", Lab: "php-persistent-share", Block: "across-requests", Params: map[string]any{"requests": 2000}, Variants: []string{"share"}})
	done, seen := until(t, c, "t", "done")
	n, truncated := 0, 0
	for _, m := range seen {
		switch m.Type {
		case "events":
			n += len(m.Events)
		case "truncated":
			truncated++
			if m.Sent != 1000 || m.Variant != "share" {
				t.Errorf("truncated %+v", m)
			}
		}
	}
	if n != 1000 || truncated != 1 {
		t.Errorf("%d events, %d truncated messages; want 1000, 1", n, truncated)
	}
	if done.Variants[0].Summary.Requests != 2000 {
		t.Errorf("summary counts %d requests", done.Variants[0].Summary.Requests)
	}
}

func TestForeignOriginRefused(t *testing.T) {
	s := newTestServer(t, Options{LoopbackHosts: true})
	for _, origin := range []string{"http://evil.example", "http://127.0.0.1:1", "null"} {
		_, resp, err := websocket.DefaultDialer.Dial(s.url, http.Header{"Origin": {origin}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("Origin %s: err %v, resp %v; want 403", origin, err, resp)
		}
	}
	// A page that points its own name at 127.0.0.1 (DNS rebinding) sends
	// its name as Host, with a matching Origin.
	req, _ := http.NewRequest("GET", s.ts.URL+"/api/params", nil)
	req.Host = "evil.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("Host evil.example: status %d, want 403", resp.StatusCode)
	}
	// Same origin, and no Origin at all (not a browser), are accepted.
	s.dial(t)
	c, _, err := websocket.DefaultDialer.Dial(s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// Bad messages get an error frame naming the field, and the socket and
// server stay up.
func TestBadMessages(t *testing.T) {
	s := newTestServer(t, Options{})
	c := s.dial(t)
	big := `{"type":"run","id":"x","lab":"` + strings.Repeat("a", 20<<10) + `"}`
	cases := []struct {
		in           string
		id, field    string
		wantInMessge string
	}{
		{big, "", "", "too large"},
		{`{"type":"run",`, "", "", "malformed JSON"},
		{`[1,2]`, "", "", "want a JSON object, got array"},
		{`{"type":"cancel","id":"a"}}`, "", "", "one JSON object"},
		{``, "", "", "empty"},
		{`{"type":"run","id":"a"} {"x":1}`, "", "", "one JSON object"},
		{`{"type":"fly","id":"a"}`, "a", "type", "unknown message type"},
		{`{"id":"a"}`, "a", "type", "needs a \"type\""},
		{`{"type":"run","id":"a","lab":"php-persistent-pools","block":"idle","colour":"red"}`, "a", "colour", "unknown field"},
		{`{"type":"run","id":"a","lab":"php-persistent-pools","block":"idle","seed":-1}`, "a", "seed", "whole number"},
		{`{"type":"run","id":"a","lab":"php-persistent-pools","block":"idle","params":[1]}`, "a", "params", "object"},
		{`{"type":"run","lab":"php-persistent-pools","block":"idle"}`, "", "id", "needs an id"},
		{`{"type":"run","id":"` + strings.Repeat("i", 65) + `","lab":"php-persistent-pools","block":"idle"}`, "", "id", "at most 64"},
		{`{"type":"run","id":"a","lab":"../../etc/passwd","block":"idle"}`, "a", "lab", "page name"},
		{`{"type":"run","id":"a","lab":"nope","block":"idle"}`, "a", "lab", `no page "nope"`},
		{`{"type":"run","id":"a","lab":"php-persistent-share","block":"nope"}`, "a", "block", `no block with id "nope"`},
		{`{"type":"run","id":"a","lab":"php-persistent-pools","block":"idle","mode":"fast"}`, "a", "mode", `want "model" or "real"`},
		{`{"type":"run","id":"a","lab":"php-persistent-pools","block":"idle","mode":"real"}`, "a", "mode", "not available in this build"},
		{`{"type":"run","id":"a","lab":"php-persistent-pools","block":"idle","variants":["zzz"]}`, "a", "variants", `no variant "zzz"`},
		{`{"type":"cancel","id":"nothing"}`, "nothing", "id", "no run"},
	}
	for _, tc := range cases {
		send(t, c, tc.in)
		m := read(t, c)
		short := tc.in
		if len(short) > 80 {
			short = short[:80] + "…"
		}
		if m.Type != "error" || m.ID != tc.id || m.Field != tc.field || !strings.Contains(m.Message, tc.wantInMessge) {
			t.Errorf("%s: got %+v; want error id %q field %q containing %q", short, m, tc.id, tc.field, tc.wantInMessge)
		}
	}
	if err := c.WriteMessage(websocket.BinaryMessage, []byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	if m := read(t, c); m.Type != "error" || !strings.Contains(m.Message, "binary") {
		t.Errorf("binary frame: %+v", m)
	}
	// The same socket still runs.
	send(t, c, runReq{Type: "run", ID: "ok", Lab: "php-persistent-share", Block: "across-requests"})
	until(t, c, "ok", "done")
	// Past the hard limit the connection is closed (1009), the server
	// stays up.
	huge := strings.Repeat("a", int(DefaultLimits.HardMessageBytes)+10)
	c.WriteMessage(websocket.TextMessage, []byte(huge))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
				t.Errorf("after a huge message: %v, want close 1009", err)
			}
			break
		}
	}
	c2 := s.dial(t)
	send(t, c2, runReq{Type: "run", ID: "ok", Lab: "php-persistent-share", Block: "across-requests"})
	until(t, c2, "ok", "done")
}

// A bad parameter names its key, whether one key is wrong or the scenario
// they make together is; limits name the key too.
func TestBadParams(t *testing.T) {
	s := newTestServer(t, Options{Real: func(ctx context.Context, b *lab.Block, set []lab.Setting, variants []string, seed uint64, sink func(string, *sim.Event)) (*lab.BlockResult, error) {
		t.Error("a refused real run ran")
		return nil, nil
	}})
	c := s.dial(t)
	cases := []struct {
		mode   runsvc.RunMode
		params map[string]any
		field  string
		want   string
	}{
		{"model", map[string]any{"rtt": "-5ms"}, "rtt", "out of range"},
		{"model", map[string]any{"rtt": 20}, "rtt", "duration with its unit"},
		{"model", map[string]any{"rtt": nil}, "rtt", "got nothing"},
		{"model", map[string]any{"rtt": map[string]any{"a": 1}}, "rtt", "a table"},
		{"model", map[string]any{"rrt": "5ms"}, "rrt", `did you mean "rtt"`},
		{"model", map[string]any{"requests": 1.5}, "requests", "whole number"},
		{"model", map[string]any{"requests": 0}, "requests", "never ends"},
		{"model", map[string]any{"tls": "1.2", "early_data": true}, "early_data", "0-RTT"},
		{"model", map[string]any{"requests": 300000}, "requests", "at most 200000"},
		{"model", map[string]any{"requests": 0, "duration": "1h", "load": "open", "rate": 1000}, "duration", "at most 200000"},
		{"real", map[string]any{"requests": 3000}, "requests", "at most 2000"},
		{"real", map[string]any{"requests": 0, "duration": "10m"}, "duration", "at most 120s"},
		{"real", map[string]any{"rtt": "2s"}, "rtt", "at most 1s"},
		{"real", map[string]any{"concurrency": 500}, "concurrency", "at most 200"},
	}
	for i, tc := range cases {
		id := fmt.Sprint(i)
		send(t, c, runReq{Type: "run", ID: id, Lab: "php-persistent-share", Block: "across-requests", Mode: tc.mode, Params: tc.params})
		m := read(t, c)
		if m.Type != "error" || m.ID != id || m.Field != tc.field || !strings.Contains(m.Message, tc.want) {
			t.Errorf("%s %v: got %+v; want field %q, message with %q", tc.mode, tc.params, m, tc.field, tc.want)
		}
	}
}

// A closed-loop run bounded only by its duration is stopped once it sends
// more requests than a model run may.
func TestModelRequestLimitWhileRunning(t *testing.T) {
	s := newTestServer(t, Options{Limits: Limits{Limits: runsvc.Limits{ModelRequests: 500}}})
	c := s.dial(t)
	send(t, c, runReq{Type: "run", ID: "d", Lab: "php-persistent-share", Block: "across-requests",
		Params: map[string]any{"requests": 0, "duration": "1h"}, Variants: []string{"persistent"}})
	m, _ := until(t, c, "d", "error")
	if m.Field != "duration" || !strings.Contains(m.Message, "more than 500 requests") {
		t.Errorf("got %+v", m)
	}
}

// goroutinesBack waits for the goroutine count to return to base.
func goroutinesBack(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Closing the socket cancels its runs, model and real, and leaves no
// goroutine behind.
func TestCloseCancelsRuns(t *testing.T) {
	var realCancelled atomic.Bool
	realStarted := make(chan struct{})
	s := newTestServer(t, Options{Real: func(ctx context.Context, b *lab.Block, set []lab.Setting, variants []string, seed uint64, sink func(string, *sim.Event)) (*lab.BlockResult, error) {
		close(realStarted)
		<-ctx.Done()
		realCancelled.Store(true)
		return nil, ctx.Err()
	}})
	ended := make(chan error, 2)
	s.runEnded = func(id string, err error) {
		if id == "model" {
			ended <- err
		}
	}
	http.Get(s.ts.URL + "/api/params") // let the HTTP client's idle goroutines exist
	time.Sleep(50 * time.Millisecond)
	base := runtime.NumGoroutine()

	c := s.dial(t)
	send(t, c, runReq{Type: "run", ID: "real", Lab: "php-persistent-share", Block: "across-requests", Mode: "real"})
	// A model run big enough to be in flight when the socket closes: the
	// client stops reading, so the run waits on it.
	send(t, c, runReq{Type: "run", ID: "model", Lab: "php-persistent-share", Block: "across-requests",
		Params: map[string]any{"requests": 200000, "concurrency": 50, "workers": 50}})
	until(t, c, "model", "events")
	<-realStarted
	c.Close()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the model run ended with %v, want context.Canceled", err)
	}
	goroutinesBack(t, base)
	if !realCancelled.Load() {
		t.Error("the real run was not cancelled")
	}
}

// A cancel message stops a run: an error "cancelled", no done.
func TestCancel(t *testing.T) {
	s := newTestServer(t, Options{Real: func(ctx context.Context, b *lab.Block, set []lab.Setting, variants []string, seed uint64, sink func(string, *sim.Event)) (*lab.BlockResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	c := s.dial(t)
	send(t, c, runReq{Type: "run", ID: "r", Lab: "php-persistent-share", Block: "across-requests", Mode: "real"})
	until(t, c, "r", "started")
	send(t, c, map[string]string{"type": "cancel", "id": "r"})
	m, seen := until(t, c, "r", "error")
	if m.Message != "cancelled" {
		t.Errorf("got %+v", m)
	}
	for _, x := range seen {
		if x.Type == "done" {
			t.Error("done after cancel")
		}
	}
}

// fakeReal is a real-run double: each call emits a few events, then waits
// for release; it records how many calls overlap.
type fakeReal struct {
	mu       sync.Mutex
	running  int
	maxSeen  int
	calls    int
	release  chan struct{}
	events   int
	variants [][]string
	// scenarios: each variant's result carries the scenario that ran, as
	// harness.RunBlock's do.
	scenarios bool
	// slow: every phase of a call takes 10 s; busy: the machine was busy
	// during the run, as the harness says (lab.VariantResult.Busy).
	slow bool
	busy string
}

func (f *fakeReal) run(ctx context.Context, b *lab.Block, set []lab.Setting, variants []string, seed uint64, sink func(string, *sim.Event)) (*lab.BlockResult, error) {
	f.mu.Lock()
	f.running++
	f.calls++
	f.maxSeen = max(f.maxSeen, f.running)
	f.variants = append(f.variants, variants)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	res := &lab.BlockResult{ID: b.ID, Title: b.Title, Checks: []lab.Check{}}
	for _, name := range variants {
		var col sim.Collector
		for i := 1; i <= f.events; i++ {
			call := sim.Event{Kind: sim.KindCall, At: time.Duration(i) * 15 * time.Millisecond, Req: i, Call: 1, Worker: 1, Conn: 1,
				NewConn: i == 1, Reused: i > 1, NameLookup: time.Millisecond, Connect: 2 * time.Millisecond, AppConnect: 5 * time.Millisecond,
				StartTransfer: 14 * time.Millisecond, Total: 15 * time.Millisecond}
			if f.slow {
				call.NameLookup, call.Connect, call.AppConnect, call.StartTransfer, call.Total = 10*time.Second, 10*time.Second, 10*time.Second, 10*time.Second, 10*time.Second
			}
			req := sim.Event{Kind: sim.KindRequest, At: call.At, Req: i, Worker: 1, Start: call.At - 15*time.Millisecond, Total: 15 * time.Millisecond}
			for _, e := range []*sim.Event{&call, &req} {
				col.Add(e)
				sink(name, e)
			}
		}
		sum := col.Summary()
		vr := &lab.VariantResult{Name: name, Label: b.Variant(name).Label, Summary: &sum}
		if f.busy != "" {
			vr.Busy, vr.BusyCPUs = f.busy, 1.5
		}
		if f.scenarios {
			sc, err := b.Scenario(b.Variant(name), set)
			if err != nil {
				return nil, err
			}
			vr.Scenario = &sc
		}
		res.Variants = append(res.Variants, vr)
	}
	select {
	case <-f.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return res, nil
}

// A real run's comparison allows for the harness's measured overhead as
// sim validate does (up to harness.MaxTare on top of its 0.5 ms for each
// round trip of a phase), and the page is told how much was measured.
func TestRealRunTare(t *testing.T) {
	f := &fakeReal{release: make(chan struct{}, 1), events: 3, scenarios: true}
	f.release <- struct{}{}
	var asked []time.Duration
	tare := func(ctx context.Context, rtt time.Duration) (time.Duration, error) {
		asked = append(asked, rtt)
		return time.Millisecond, nil
	}
	s := newTestServer(t, Options{Real: f.run, Tare: tare})
	c := s.dial(t)
	send(t, c, runReq{Type: "run", ID: "a", Lab: "php-persistent-share", Block: "across-requests", Mode: "real", Variants: []string{"persistent"}})
	done, _ := until(t, c, "a", "done")
	if len(done.Variants) != 1 || len(done.Variants[0].Compare) == 0 {
		t.Fatalf("done %s", asJSON(done))
	}
	v := done.Variants[0]
	if v.HarnessOverheadMS != 1 || len(asked) != 1 || asked[0] <= 0 {
		t.Errorf("overhead %v ms, asked at %v", v.HarnessOverheadMS, asked)
	}
	// across-requests: DNS 30 ms, TLS 1.2 (two round trips), 2 ms of server
	// work, a response of 20,000 B (two windows from the initial one).
	trips := map[string]int{"namelookup": 1, "connect": 2, "appconnect": 4, "total, new conn": 7, "total, reused": 3}
	for _, p := range []string{"starttransfer", "total"} {
		trips[p] = 3
		if v.Model.Connects > v.Model.Reused {
			trips[p] = 7
		}
	}
	for _, p := range v.Compare {
		// max(5 %, 0.5 ms + the overhead for each round trip)
		want := math.Max(0.05*p.ModelMS, 0.5+float64(trips[p.Phase])*float64(harness.MaxTare)/1e6)
		if p.Note == "" && math.Abs(p.ToleranceMS-want) > 0.001 {
			t.Errorf("%s: tolerance %.3f ms, want %.3f", p.Phase, p.ToleranceMS, want)
		}
	}
}

// TestRealRunVerdict: a real run's done message says what sim validate
// would of its phases: inconclusive when they missed slower than the model
// on a machine the harness measured busy, disagree when the machine was
// quiet or a phase was quicker than the model.
func TestRealRunVerdict(t *testing.T) {
	const busy = "other programs used 1.50 CPUs on average during the run"
	cases := []struct {
		name       string
		slow       bool
		busy, want string
		says       string
	}{
		{"slower, busy", true, busy, harness.VerdictInconclusive, "machine busy: " + busy},
		{"slower, quiet", true, "", harness.VerdictDisagree, ""},
		{"quicker, busy", false, busy, harness.VerdictDisagree, "a busy machine only adds time"},
	}
	for _, c := range cases {
		f := &fakeReal{release: make(chan struct{}, 1), events: 3, scenarios: true, slow: c.slow, busy: c.busy}
		f.release <- struct{}{}
		s := newTestServer(t, Options{Real: f.run})
		conn := s.dial(t)
		send(t, conn, runReq{Type: "run", ID: "v", Lab: "php-persistent-share", Block: "across-requests", Mode: "real", Variants: []string{"persistent"}})
		var raw struct {
			Variants []struct {
				Verdict  string  `json:"verdict"`
				Why      string  `json:"why"`
				BusyCPUs float64 `json:"busy_cpus"`
			} `json:"variants"`
		}
		for {
			conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, data, err := conn.ReadMessage()
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var m msg
			json.Unmarshal(data, &m)
			if m.Type == "error" {
				t.Fatalf("%s: %+v", c.name, m)
			}
			if m.Type == "done" {
				json.Unmarshal(data, &raw)
				break
			}
		}
		if len(raw.Variants) != 1 {
			t.Fatalf("%s: %d variants", c.name, len(raw.Variants))
		}
		v := raw.Variants[0]
		if v.Verdict != c.want || !strings.Contains(v.Why, c.says) {
			t.Errorf("%s: verdict %q (%q), want %q saying %q", c.name, v.Verdict, v.Why, c.want, c.says)
		}
		if (c.busy != "") != (v.BusyCPUs > 0) {
			t.Errorf("%s: busy_cpus %v", c.name, v.BusyCPUs)
		}
	}
}

// Real runs run one at a time on the whole server; the others are told
// their place, which moves up as runs end or leave.
func TestRealRunsQueue(t *testing.T) {
	f := &fakeReal{release: make(chan struct{}), events: 3}
	s := newTestServer(t, Options{Real: f.run})
	a, b, c := s.dial(t), s.dial(t), s.dial(t)
	req := func(id string) runReq {
		return runReq{Type: "run", ID: id, Lab: "php-persistent-share", Block: "across-requests", Mode: "real", Variants: []string{"persistent"}}
	}
	send(t, a, req("a"))
	until(t, a, "a", "started")
	send(t, b, req("b"))
	if m, _ := until(t, b, "b", "queued"); m.Position != 1 {
		t.Errorf("b queued at %d, want 1", m.Position)
	}
	send(t, c, req("c"))
	if m, _ := until(t, c, "c", "queued"); m.Position != 2 {
		t.Errorf("c queued at %d, want 2", m.Position)
	}
	// d queues behind c, then cancels while waiting: c keeps its place.
	d := s.dial(t)
	send(t, d, req("d"))
	if m, _ := until(t, d, "d", "queued"); m.Position != 3 {
		t.Errorf("d queued at %d, want 3", m.Position)
	}
	send(t, d, map[string]string{"type": "cancel", "id": "d"})
	if m, _ := until(t, d, "d", "error"); m.Message != "cancelled" {
		t.Errorf("d: %+v", m)
	}
	// a finishes: b runs, c moves up.
	f.release <- struct{}{}
	done, seen := until(t, a, "a", "done")
	events := 0
	for _, m := range seen {
		if m.Type == "events" {
			events += len(m.Events)
			if m.ServerMS <= 0 {
				t.Error("events without server_ms")
			}
		}
	}
	if events != 6 {
		t.Errorf("a streamed %d events, want 6", events)
	}
	if len(done.Variants) != 1 || done.Variants[0].Model == nil || len(done.Variants[0].Compare) != 7 || done.Variants[0].Summary.Requests != 3 {
		t.Fatalf("real done %s", asJSON(done))
	}
	if m, _ := until(t, b, "b", "started"); m.Mode != "real" {
		t.Errorf("b started %+v", m)
	}
	if m, _ := until(t, c, "c", "queued"); m.Position != 1 {
		t.Errorf("c moved to %d, want 1", m.Position)
	}
	// b's client leaves while running: c runs.
	b.Close()
	until(t, c, "c", "started")
	f.release <- struct{}{}
	until(t, c, "c", "done")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxSeen != 1 || f.calls != 3 { // a, b, c; d never ran
		t.Errorf("%d calls, at most %d at once; want 3, 1", f.calls, f.maxSeen)
	}
	if !reflect.DeepEqual(f.variants[0], []string{"persistent"}) {
		t.Errorf("Real got variants %v", f.variants[0])
	}
}

// Real mode sends running summaries about once a second.
func TestRealStats(t *testing.T) {
	f := &fakeReal{release: make(chan struct{}), events: 5}
	s := newTestServer(t, Options{Real: f.run, Limits: Limits{StatsEvery: 20 * time.Millisecond}})
	c := s.dial(t)
	send(t, c, runReq{Type: "run", ID: "s", Lab: "php-persistent-share", Block: "across-requests", Mode: "real"})
	// The first stats may come while the fake is still emitting; the
	// next ones count everything.
	for {
		st, _ := until(t, c, "s", "stats")
		if st.Summary == nil || st.Summary.Requests > 5 {
			t.Fatalf("stats %s", asJSON(st))
		}
		if st.Summary.Requests == 5 {
			break
		}
	}
	close(f.release)
	until(t, c, "s", "done")
}

// A slow client loses its oldest batches (and is told how many), and does
// not slow down another client.
func TestSlowClientDrops(t *testing.T) {
	const n = 50000 // calls, each with its request: 100,000 events
	f := &fakeReal{release: make(chan struct{}), events: n}
	close(f.release)
	s := newTestServer(t, Options{Real: f.run, Limits: Limits{Limits: runsvc.Limits{RealRequests: n}, ConnLimits: web.ConnLimits{QueueBytes: 64 << 10, WriteWait: time.Minute}}})
	slow, _, err := smallBufferDialer.Dial(s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast := s.dial(t)
	send(t, slow, runReq{Type: "run", ID: "slow", Lab: "php-persistent-share", Block: "across-requests", Mode: "real", Variants: []string{"share"}})
	// The slow client reads nothing until its run is over.
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		calls, running := f.calls, f.running
		f.mu.Unlock()
		if calls == 1 && running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow client's run did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Meanwhile another client is served at once.
	send(t, fast, runReq{Type: "run", ID: "fast", Lab: "php-persistent-share", Block: "across-requests"})
	until(t, fast, "fast", "done")

	_, seen := until(t, slow, "slow", "done")
	events, dropped := 0, 0
	for _, m := range seen {
		switch m.Type {
		case "events":
			events += len(m.Events)
		case "dropped":
			dropped += m.Count
		}
	}
	if dropped == 0 || events >= 2*n {
		t.Errorf("slow client: %d events, %d batches dropped; want drops", events, dropped)
	}
	if events+dropped*DefaultLimits.BatchEvents < 2*n {
		t.Errorf("%d events + %d dropped batches do not account for %d events", events, dropped, 2*n)
	}
}

// A model run waits a little for a client that reads a little slower than
// the model computes, instead of dropping its events.
func TestModelBackpressure(t *testing.T) {
	s := newTestServer(t, Options{Limits: Limits{ConnLimits: web.ConnLimits{QueueBytes: 32 << 10}}})
	c := s.dial(t)
	send(t, c, runReq{Type: "run", ID: "bp", Lab: "php-persistent-share", Block: "across-requests", Params: map[string]any{"requests": 1000}})
	n := 0
	for {
		m := read(t, c)
		time.Sleep(time.Millisecond)
		if m.Type == "dropped" {
			t.Fatalf("dropped %d batches", m.Count)
		}
		n += len(m.Events)
		if m.Type == "done" {
			break
		}
	}
	if n < 4000 {
		t.Errorf("%d events", n)
	}
}

func TestRunsPerSocket(t *testing.T) {
	s := newTestServer(t, Options{Real: func(ctx context.Context, b *lab.Block, set []lab.Setting, variants []string, seed uint64, sink func(string, *sim.Event)) (*lab.BlockResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	c := s.dial(t)
	for i := range 4 {
		send(t, c, runReq{Type: "run", ID: fmt.Sprint(i), Lab: "php-persistent-share", Block: "across-requests", Mode: "real"})
	}
	send(t, c, runReq{Type: "run", ID: "0", Lab: "php-persistent-share", Block: "across-requests", Mode: "real"})
	send(t, c, runReq{Type: "run", ID: "4", Lab: "php-persistent-share", Block: "across-requests", Mode: "real"})
	var errs []msg
	for len(errs) < 2 {
		if m := read(t, c); m.Type == "error" {
			errs = append(errs, m)
		}
	}
	if errs[0].ID != "0" || errs[0].Field != "id" || !strings.Contains(errs[0].Message, "already in flight") {
		t.Errorf("duplicate id: %+v", errs[0])
	}
	if errs[1].ID != "4" || !strings.Contains(errs[1].Message, "at most 4 runs") {
		t.Errorf("fifth run: %+v", errs[1])
	}
}

func TestStatic(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	write("index.html", "<h1>home</h1>")
	write("404.html", "<h1>lost</h1>")
	write("ko/404.html", "<h1>없음</h1>")
	write("js/widget.0123456789abcdef0123.js", "x()")
	write("labs/index.html", "labs")
	write("empty/.keep", "")
	write(".git/config", "secret")
	s := newTestServer(t, Options{Public: dir})
	get := func(path string) (int, string, http.Header) {
		resp, err := http.Get(s.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String(), resp.Header
	}
	for _, tc := range []struct {
		path, body, cache string
		code              int
	}{
		{"/", "<h1>home</h1>", "no-cache", 200},
		{"/labs/", "labs", "no-cache", 200},
		{"/js/widget.0123456789abcdef0123.js", "x()", "immutable", 200},
		{"/nope", "<h1>lost</h1>", "no-cache", 404},
		{"/ko/nope", "<h1>없음</h1>", "no-cache", 404},
		{"/empty/", "<h1>lost</h1>", "", 404},
		{"/.git/config", "<h1>lost</h1>", "", 404},
	} {
		code, body, h := get(tc.path)
		if code != tc.code || body != tc.body || !strings.Contains(h.Get("Cache-Control"), tc.cache) {
			t.Errorf("%s: %d %q (Cache-Control %q); want %d %q (%q)", tc.path, code, body, h.Get("Cache-Control"), tc.code, tc.body, tc.cache)
		}
	}
	// Without a built site, a clear message.
	s2 := newTestServer(t, Options{Public: filepath.Join(dir, "missing")})
	resp, err := http.Get(s2.ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(buf[:n]), "make site") {
		t.Errorf("no site: %d %q", resp.StatusCode, buf[:n])
	}
}

// /api/status counts the open sockets and runs in flight.
func TestStatus(t *testing.T) {
	release := make(chan struct{})
	s := newTestServer(t, Options{Real: func(ctx context.Context, b *lab.Block, set []lab.Setting, variants []string, seed uint64, sink func(string, *sim.Event)) (*lab.BlockResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, ctx.Err()
	}})
	status := func() Status {
		resp, err := http.Get(s.ts.URL + "/api/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := status(); st.Clients != 0 || st.Runs != 0 || st.Goroutines <= 0 {
		t.Errorf("at rest: %+v", st)
	}
	c := s.dial(t)
	send(t, c, runReq{Type: "run", ID: "r", Lab: "php-persistent-share", Block: "across-requests", Mode: "real"})
	until(t, c, "r", "started")
	if st := status(); st.Clients != 1 || st.Runs != 1 {
		t.Errorf("one socket, one run: %+v", st)
	}
	c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for st := status(); st.Clients != 0 || st.Runs != 0; st = status() {
		if time.Now().After(deadline) {
			t.Fatalf("after the socket closed: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
}

// The site's files are the only ones served: a symbolic link that leads
// out of the site is not followed (one within it is).
func TestStaticSymlinks(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "404.html"), []byte("<h1>lost</h1>"), 0o644)
	os.WriteFile(filepath.Join(dir, "page.html"), []byte("page"), 0o644)
	for link, target := range map[string]string{
		"leak.txt":  filepath.Join(outside, "secret.txt"),
		"out":       outside,
		"rel.txt":   "../" + filepath.Base(outside) + "/secret.txt",
		"same.html": "page.html",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	s := newTestServer(t, Options{Public: dir})
	for path, want := range map[string]string{
		"/leak.txt":       "<h1>lost</h1>",
		"/out/secret.txt": "<h1>lost</h1>",
		"/out/":           "<h1>lost</h1>",
		"/rel.txt":        "<h1>lost</h1>",
		"/same.html":      "page",
	} {
		resp, err := http.Get(s.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != want || strings.Contains(string(body), "secret") {
			t.Errorf("%s: %d %q, want %q", path, resp.StatusCode, body, want)
		}
	}
}

// Range requests: one range is served (206); several get the whole file
// (200), never a multipart reply bigger than the file; a suffix of zero
// bytes is unsatisfiable (416).
func TestStaticRange(t *testing.T) {
	dir := t.TempDir()
	page := strings.Repeat("0123456789", 400)
	os.WriteFile(filepath.Join(dir, "page.html"), []byte(page), 0o644)
	s := newTestServer(t, Options{Public: dir})
	many := make([]string, 2000)
	for i := range many {
		many[i] = fmt.Sprintf("%d-%d", 2*i, 2*i) // 2,000 bytes of a 4,000-byte page
	}
	for _, tc := range []struct {
		rng          string
		code         int
		body, crange string
	}{
		{"bytes=0-9", 206, page[:10], "bytes 0-9/4000"},
		{"bytes=-5", 206, page[3995:], "bytes 3995-3999/4000"},
		{"bytes=0-0,2-2", 200, page, ""},
		{"bytes=" + strings.Join(many, ","), 200, page, ""},
		{"bytes=-0", 416, "", "bytes */4000"},
		{"bytes= -0", 416, "", "bytes */4000"},
	} {
		req, _ := http.NewRequest("GET", s.ts.URL+"/page.html", nil)
		req.Header.Set("Range", tc.rng)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		short := tc.rng[:min(len(tc.rng), 30)]
		if resp.StatusCode != tc.code || resp.Header.Get("Content-Range") != tc.crange {
			t.Errorf("Range %s: %d %q, want %d %q", short, resp.StatusCode, resp.Header.Get("Content-Range"), tc.code, tc.crange)
		}
		if tc.code != 416 && string(body) != tc.body {
			t.Errorf("Range %s: %d bytes, want %d", short, len(body), len(tc.body))
		}
	}
}

func TestParams(t *testing.T) {
	s := newTestServer(t, Options{})
	resp, err := http.Get(s.ts.URL + "/api/params")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []sim.Param
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(sim.Params()) || got[0].Key != sim.Params()[0].Key {
		t.Errorf("/api/params: %d params", len(got))
	}
}

// Pages are keyed by name; a Korean page alone is found by its English
// name, an edited page is read again, a broken page's error reaches the
// run.
func TestPages(t *testing.T) {
	dir := t.TempDir()
	block := func(id, reqs string) string {
		return "```sim {id=\"" + id + "\"}\nrequests = " + reqs + "\n```\n"
	}
	os.MkdirAll(filepath.Join(dir, "anatomy"), 0o755)
	os.WriteFile(filepath.Join(dir, "anatomy", "index.md"), []byte(block("a", "2")), 0o644)
	os.WriteFile(filepath.Join(dir, "only.ko.md"), []byte(block("k", "3")), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.md"), []byte("```sim {id=\"x\"}\nrtt = \"-1ms\"\n```\n"), 0o644)
	s := newTestServer(t, Options{Labs: []string{dir}, Logf: func(string, ...any) {}})
	c := s.dial(t)
	run := func(id, page, block string) msg {
		send(t, c, runReq{Type: "run", ID: id, Lab: page, Block: block})
		for {
			m := read(t, c)
			if m.ID == id && (m.Type == "done" || m.Type == "error") {
				return m
			}
		}
	}
	if m := run("1", "anatomy", "a"); m.Type != "done" || m.Variants[0].Summary.Requests != 2 {
		t.Errorf("bundle page: %+v", m)
	}
	if m := run("2", "only", "k"); m.Type != "done" || m.Variants[0].Summary.Requests != 3 {
		t.Errorf("Korean-only page: %+v", m)
	}
	if m := run("3", "broken", "x"); m.Type != "error" || m.Field != "lab" || !strings.Contains(m.Message, "broken.md:2") {
		t.Errorf("broken page: %+v", m)
	}
	// An edit is seen by the next run; a new page too.
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(filepath.Join(dir, "only.ko.md"), []byte(block("k", "5")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "new.md"), []byte(block("n", "1")), 0o644)
	if m := run("4", "only", "k"); m.Type != "done" || m.Variants[0].Summary.Requests != 5 {
		t.Errorf("edited page: %+v", m)
	}
	time.Sleep(600 * time.Millisecond)
	if m := run("5", "new", "n"); m.Type != "done" {
		t.Errorf("new page: %+v", m)
	}
}

// Close ends every socket and run, and Serve returns on ctx.
func TestServeShutdown(t *testing.T) {
	base := runtime.NumGoroutine()
	s := New(Options{Labs: []string{labsDir}, Real: func(ctx context.Context, b *lab.Block, set []lab.Setting, variants []string, seed uint64, sink func(string, *sim.Event)) (*lab.BlockResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	addr, stop := serveTest(t, s, 10*time.Second)
	c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send(t, c, runReq{Type: "run", ID: "r", Lab: "php-persistent-share", Block: "across-requests", Mode: "real"})
	until(t, c, "r", "started")
	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
				t.Errorf("socket ended with %v, want going away", err)
			}
			break
		}
	}
	c.Close()
	http.DefaultClient.CloseIdleConnections()
	goroutinesBack(t, base)
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// serveTest runs s.Serve on a new loopback listener. stop cancels it and
// returns Serve's error; the test fails if Serve has not returned within
// wait.
func serveTest(t *testing.T, s *Server, wait time.Duration) (addr string, stop func() error) {
	t.Helper()
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ctx, ln) }()
	return ln.Addr().String(), func() error {
		cancel()
		select {
		case err := <-errc:
			return err
		case <-time.After(wait):
			t.Fatalf("Serve did not return within %v of shutdown", wait)
			return nil
		}
	}
}

// A connection that has sent no request (a browser opens some ahead of
// time) does not hold the shutdown: Serve returns without error, the
// connection closed. Without the server closing it, http.Server.Shutdown
// waits 5 s for it and fails.
func TestServeShutdownFreshConn(t *testing.T) {
	addr, stop := serveTest(t, New(Options{Labs: []string{labsDir}}), 20*time.Second)
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// The server has taken the connection (a request on another one was
	// answered after it was accepted).
	if r, err := http.Get("http://" + addr + "/api/server.json"); err != nil {
		t.Fatal(err)
	} else {
		r.Body.Close()
	}
	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the connection without a request is still open after Serve returned: %v", err)
	}
	http.DefaultClient.CloseIdleConnections()
}

// The server pings; a page that answers stays, one that stops reading is
// closed after PongWait.
func TestPingPong(t *testing.T) {
	s := newTestServer(t, Options{Limits: Limits{ConnLimits: web.ConnLimits{PingPeriod: 50 * time.Millisecond, PongWait: 500 * time.Millisecond}}})
	live := s.dial(t)
	mute := s.dial(t)
	// live reads (and so answers pings) for more than 2 pong waits.
	pings := 0
	live.SetPingHandler(func(data string) error {
		pings++
		return live.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	live.SetReadDeadline(time.Now().Add(1200 * time.Millisecond))
	if _, _, err := live.ReadMessage(); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("live: %v", err)
	}
	if pings < 5 {
		t.Errorf("%d pings in 1.2 s, want about 24", pings)
	}
	// gorilla's read errors are sticky: check the socket with a new reader
	// on the server side by running something on a fresh socket, and that
	// mute (which read nothing, so answered no ping) was closed.
	mute.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := mute.ReadMessage(); err != nil {
			if strings.Contains(err.Error(), "timeout") {
				t.Errorf("mute socket still open: %v", err)
			}
			break
		}
	}
	c := s.dial(t)
	send(t, c, runReq{Type: "run", ID: "1", Lab: "php-persistent-share", Block: "across-requests"})
	until(t, c, "1", "done")
}

// Serve drops a client that sends its headers too slowly (slowloris).
func TestServeHeaderTimeout(t *testing.T) {
	addr, stop := serveTest(t, New(Options{Labs: []string{labsDir}, Limits: Limits{HeaderTimeout: 200 * time.Millisecond}}), 20*time.Second)
	defer stop()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"))
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	buf := make([]byte, 512)
	for {
		if _, err := conn.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the server kept a connection whose headers never ended")
			}
			break
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("closed after %s", d)
	}
}

// smallBufferDialer dials with a fixed 64 KiB receive buffer, so the kernel
// does not absorb a stream the page does not read.
var smallBufferDialer = websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(64 << 10)
	}
	return c, err
}}

// A page that stops reading during model runs holds none of the server's
// model slots: another page's runs go on.
func TestSlowModelClientHoldsOneSlot(t *testing.T) {
	s := newTestServer(t, Options{Limits: Limits{ModelRuns: 1, ConnLimits: web.ConnLimits{WriteWait: time.Minute}}})
	slow, _, err := smallBufferDialer.Dial(s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	for i := range 4 {
		send(t, slow, runReq{Type: "run", ID: fmt.Sprint(i), Lab: "php-persistent-share", Block: "across-requests", Params: map[string]any{"requests": 20000}})
	}
	time.Sleep(200 * time.Millisecond) // the slow page's first run is waiting on it
	fast := s.dial(t)
	for i := range 3 {
		id := fmt.Sprint("f", i)
		send(t, fast, runReq{Type: "run", ID: id, Lab: "php-persistent-pools", Block: "workers"})
		until(t, fast, id, "done")
	}
}

// A whole-stack block's tier slider (tier.NAME.KEY) runs on sim serve as
// in the page's model: the block's tiers check the key, and a key of a tier
// the block lacks names itself.
func TestRunTierParams(t *testing.T) {
	s := newTestServer(t, Options{})
	c := s.dial(t)
	send(t, c, runReq{Type: "run", ID: "t", Lab: "stack-connections", Block: "tiers", Params: map[string]any{"tier.app.workers": 3}})
	m, _ := until(t, c, "t", "done")
	if len(m.Variants) == 0 || m.Variants[0].Summary == nil {
		t.Fatalf("done without summaries: %+v", m)
	}
	send(t, c, runReq{Type: "run", ID: "u", Lab: "stack-connections", Block: "tiers", Params: map[string]any{"tier.nope.workers": 3}})
	e, _ := until(t, c, "u", "error")
	if e.Field != "tier.nope.workers" || !strings.Contains(e.Message, "nope") {
		t.Errorf("an unknown tier: field %q, message %q", e.Field, e.Message)
	}
}
