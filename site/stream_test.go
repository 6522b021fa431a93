package site

// The widget under a fast stream: a stand-in for `sim serve` (same /ws
// protocol) sends a run of four variants as fast as the page takes it or at
// a set rate, and the page must count and draw every event and keep
// answering meanwhile. BenchmarkWidgetStream reports the events per second
// one page takes (the target is 50,000) and the longest task it ran.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"github.com/connlab/connlab/sim"
)

// fakeStream serves the built site and a /ws that answers every run with
// `variants` variants of `calls` calls each (a multiple of 4): every fourth
// call opens a connection that the next three reuse, then the client closes
// it into TIME_WAIT; 7 events per 4 calls, in batches of 512, at rate
// events per second (0: as fast as the socket takes them).
type fakeStream struct {
	variants int
	calls    int
	rate     float64

	once    sync.Once
	batches [][]byte // encoded once: under the race detector encoding is slow
	counts  []int
}

// batch returns the events as encoded batches, made once.
func (f *fakeStream) batch() ([][]byte, []int) {
	f.once.Do(func() {
		f.events(func(b []byte, n int) {
			f.batches = append(f.batches, append([]byte(nil), b...))
			f.counts = append(f.counts, n)
		})
	})
	return f.batches, f.counts
}

func (f *fakeStream) eventsPerVariant() int { return f.calls / 4 * 7 }

// events writes variant v's events, batch by batch, to emit.
func (f *fakeStream) events(emit func(batch []byte, n int)) {
	buf := make([]byte, 0, 512*260)
	n := 0
	addRaw := func(s []byte) {
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, s...)
		if n++; n == 512 {
			emit(buf, n)
			buf, n = buf[:0], 0
		}
	}
	// Encoded as sim/server encodes them (sim.Event.AppendCompactJSON).
	var ev []byte
	add := func(e sim.Event) { ev = e.AppendCompactJSON(ev[:0]); addRaw(ev) }
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	conn := 0
	for i := 0; i < f.calls; i++ {
		start := float64(i) * 0.4
		fresh := i%4 == 0
		port := 32768 + conn%28000
		total, dns, connect, tls := 0.3, 0.0, 0.0, 0.0
		if fresh {
			conn++
			port = 32768 + conn%28000
			total, dns, connect, tls = 1.2, 0.2, 0.5, 0.9
			add(sim.Event{Kind: sim.KindOpen, At: ms(start + 0.2), Req: i + 1, Call: 1, Worker: 1, Conn: conn, LocalPort: port})
		}
		add(sim.Event{Kind: sim.KindCall, At: ms(start + total), Req: i + 1, Call: 1, Worker: 1, Conn: conn, NewConn: fresh, Reused: !fresh,
			Start: ms(start), NameLookup: ms(dns), Connect: ms(connect), AppConnect: ms(tls), StartTransfer: ms(total - 0.1), Total: ms(total), LocalPort: port})
		if i%4 == 3 {
			at := ms(start + total)
			add(sim.Event{Kind: sim.KindClose, At: at, Conn: conn, LocalPort: port, By: "client", Reason: "no-reuse"})
			add(sim.Event{Kind: sim.KindTimeWait, At: at, LocalPort: port, By: "client"})
		}
	}
	if n > 0 {
		emit(buf, n)
	}
}

func (f *fakeStream) handler(public string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(public)))
	// The pages ask which host served them (sim/cli/serve_probe.go).
	mux.HandleFunc("GET /api/server.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"server":true,"real":true,"class":false}`))
	})
	up := websocket.Upgrader{}
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		fc := &fakeConn{c: c, cancelled: map[string]bool{}}
		var runs sync.WaitGroup
		defer func() {
			c.Close()
			runs.Wait()
		}()
		for {
			var m struct{ Type, ID, Mode string }
			if err := c.ReadJSON(&m); err != nil {
				return
			}
			switch {
			case m.Type == "cancel":
				// As sim serve does: a run the page has left (it pressed
				// Run again, or a block ran by itself first) stops.
				fc.cancel(m.ID)
			case m.Type == "run" && m.Mode == "real":
				runs.Go(func() { f.real(fc, m.ID) })
			case m.Type == "run":
				runs.Go(func() { f.run(fc, m.ID) })
			}
		}
	})
	return mux
}

// fakeConn is one page's socket: runs write from their own goroutines,
// one message at a time, and stop when cancelled.
type fakeConn struct {
	c         *websocket.Conn
	mu        sync.Mutex
	cancelled map[string]bool
}

func (fc *fakeConn) WriteJSON(v any) error {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.c.WriteJSON(v)
}

func (fc *fakeConn) WriteMessage(kind int, data []byte) error {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.c.WriteMessage(kind, data)
}

func (fc *fakeConn) cancel(id string) {
	fc.mu.Lock()
	fc.cancelled[id] = true
	fc.mu.Unlock()
}

func (fc *fakeConn) stopped(id string) bool {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.cancelled[id]
}

func (f *fakeStream) run(c *fakeConn, id string) {
	var names []string
	var vs []map[string]string
	for v := 0; v < f.variants; v++ {
		names = append(names, "v"+strconv.Itoa(v+1))
		vs = append(vs, map[string]string{"name": names[v], "label": "variant " + strconv.Itoa(v+1)})
	}
	c.WriteJSON(map[string]any{"type": "started", "id": id, "mode": "model", "block": "", "variants": vs, "params": map[string]any{}})
	begin := time.Now()
	sent := 0
	head := `{"type":"events","id":` + strconv.Quote(id) + `,"variant":`
	var done []map[string]any
	batches, counts := f.batch()
	for v, name := range names {
		for i, batch := range batches {
			if c.stopped(id) {
				return
			}
			msg := head + strconv.Quote(name) + `,"events":[` + string(batch) + `]}`
			if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				return
			}
			sent += counts[i]
			if f.rate > 0 {
				if ahead := time.Duration(float64(sent)/f.rate*float64(time.Second)) - time.Since(begin); ahead > 0 {
					time.Sleep(ahead)
				}
			}
		}
		calls := f.calls
		done = append(done, map[string]any{"name": name, "label": "variant " + strconv.Itoa(v+1), "summary": map[string]any{
			"requests": calls, "calls": calls, "connects": (calls + 3) / 4, "reused": calls - (calls+3)/4, "errors": 0, "port_errors": 0,
			"races": 0, "time_wait_peak": (calls + 3) / 4, "server_time_wait_peak": 0, "open_peak": 1, "throughput_rps": 2500, "duration_s": 0,
			"first_port_error_s": nil, "recovered_s": nil, "total_ms": map[string]any{"p50": 0.3, "p90": 1.2, "p99": 1.2, "mean": 0.525}}})
	}
	c.WriteJSON(map[string]any{"type": "done", "id": id, "variants": done, "checks": []any{}, "elapsed_ms": float64(time.Since(begin).Microseconds()) / 1000})
}

// real answers a real run as PROTOCOL.md says sim serve does: queued, then
// started, events, a periodic stats, and a done whose variants carry the
// model's summary and the phase comparison beside the measurement.
func (f *fakeStream) real(c *fakeConn, id string) {
	c.WriteJSON(map[string]any{"type": "queued", "id": id, "position": 1})
	time.Sleep(300 * time.Millisecond)
	var vs []map[string]string
	for v := 0; v < f.variants; v++ {
		vs = append(vs, map[string]string{"name": "v" + strconv.Itoa(v+1), "label": "variant " + strconv.Itoa(v+1)})
	}
	c.WriteJSON(map[string]any{"type": "started", "id": id, "mode": "real", "variants": vs, "params": map[string]any{}})
	summary := func(p50 float64, calls int) map[string]any {
		return map[string]any{"requests": calls, "calls": calls, "connects": calls / 4, "reused": calls - calls/4, "errors": 0,
			"port_errors": 0, "races": 0, "time_wait_peak": calls / 4, "server_time_wait_peak": 0, "open_peak": 1,
			"throughput_rps": 100, "duration_s": 1, "first_port_error_s": nil, "recovered_s": nil,
			"total_ms": map[string]any{"p50": p50, "p90": p50 * 2, "p99": p50 * 3, "mean": p50}}
	}
	var done []map[string]any
	for v, m := range vs {
		f.events(func(batch []byte, n int) {
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"events","id":`+strconv.Quote(id)+`,"variant":`+strconv.Quote(m["name"])+`,"events":[`+string(batch)+`]}`))
		})
		p50 := []float64{0.33, 0.43, 0.53, 0.63}[v%4]
		measured := summary(p50, f.calls)
		c.WriteJSON(map[string]any{"type": "stats", "id": id, "variant": m["name"], "summary": measured})
		dv := map[string]any{"name": m["name"], "label": m["label"], "summary": measured, "error": "",
			"harness_overhead_ms": 0.25, "model": summary(0.3, f.calls), "compare": []map[string]any{
				{"phase": "connect_ms", "model_ms": 0.5, "measured_ms": 0.52, "error_pct": 4, "ok": true},
				{"phase": "total_ms", "model_ms": 0.3, "measured_ms": p50, "error_pct": (p50 - 0.3) / 0.3 * 100, "ok": v == 0},
				{"phase": "starttransfer", "model_ms": 10.05, "measured_ms": 11.9, "error_pct": 18.4, "ok": true, "note": "median of a mix"},
			}, "verdict": "agree"}
		if v > 0 { // slower than the model while other programs kept the machine busy
			dv["verdict"], dv["why"], dv["busy_cpus"] = "inconclusive", "machine busy: other programs used 1.84 CPUs on average during the run", 1.84
		}
		done = append(done, dv)
	}
	c.WriteJSON(map[string]any{"type": "done", "id": id, "variants": done, "checks": []any{}, "elapsed_ms": 1234.5})
}

// streamResult is what one streamed run did to the page.
type streamResult struct {
	events      int
	rows        []int
	elapsed     time.Duration
	longestTask float64       // ms, from the page's PerformanceObserver
	slowestEval time.Duration // longest wait for the page to answer during the stream
}

// streamRun opens a lab page served by f, presses Run on its first widget
// and waits until the run is drawn.
func streamRun(ctx context.Context, base string, p sitePage, f *fakeStream) (*streamResult, error) {
	id := "sim-" + p.lab.Blocks[0].ID
	if err := chromedp.Do(ctx, chromedp.Navigate(base+p.url)); err != nil {
		return nil, err
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.querySelector("figure.sim.live")`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		return nil, err
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__longest = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longest = Math.max(window.__longest, e.duration); }).observe({type: "longtask"});`)); err != nil {
		return nil, err
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector("#%s[data-predict=pending] .pr-skip")?.click()`, id))); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#"+id+" .sim-run"))); err != nil {
		return nil, err
	}
	r := &streamResult{}
	for {
		t0 := time.Now()
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(() => { const f = document.getElementById(%q);
return JSON.stringify({ready: f.dataset.ready === "1", events: +(f.dataset.events || 0), state: f.querySelector(".sim-status").dataset.state || "",
  rows: [...f.querySelectorAll(".sim-wf")].map(w => +w.dataset.rows), longest: window.__longest}); })()`, id)))
		if err != nil {
			return nil, err
		}
		r.slowestEval = max(r.slowestEval, time.Since(t0))
		var st struct {
			Ready   bool
			Events  int
			State   string
			Rows    []int
			Longest float64
		}
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return nil, err
		}
		if st.State == "error" || st.State == "noserver" {
			return nil, fmt.Errorf("the run failed (%s)", st.State)
		}
		if st.Ready {
			r.events, r.rows, r.longestTask, r.elapsed = st.Events, st.Rows, st.Longest, time.Since(start)
			return r, nil
		}
		if time.Since(start) > 2*time.Minute {
			return nil, fmt.Errorf("no result within 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func listenFake(t testing.TB, s *builtSite, f *fakeStream) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f.handler(s.public)}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		srv.Close()
	})
	return "http://" + ln.Addr().String()
}

func firstLabPage(t testing.TB, s *builtSite) sitePage {
	for _, p := range s.pages {
		if p.lang == "en" && p.name == "php-persistent-share" {
			return p
		}
	}
	t.Fatal("no php-persistent-share page")
	return sitePage{}
}

// Four variants at 50,000 events a second: the page counts every event,
// draws one waterfall row per call, and answers while it streams.
func TestBrowserStream(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	f := &fakeStream{variants: 4, calls: 8_000, rate: 50_000}
	base := listenFake(t, s, f)
	r, err := streamRun(ctx, base, firstLabPage(t, s), f)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events in %v (%.0f events/s); longest task %.0f ms; slowest answer %v", r.events, r.elapsed.Round(time.Millisecond),
		float64(r.events)/r.elapsed.Seconds(), r.longestTask, r.slowestEval.Round(time.Millisecond))
	if want := f.variants * f.eventsPerVariant(); r.events != want {
		t.Errorf("the page counted %d events, the server sent %d", r.events, want)
	}
	for i, rows := range r.rows {
		if rows != f.calls {
			t.Errorf("variant %d: %d waterfall rows, want one per call sent (%d)", i+1, rows, f.calls)
		}
	}
	// A frozen page does not answer at all; a busy one answers late. Allow
	// for a shared, loaded machine.
	if r.slowestEval > 5*time.Second {
		t.Errorf("the page took %v to answer while streaming", r.slowestEval)
	}
}

// BenchmarkWidgetStream streams 4 × 49,000 events unpaced to one page and
// reports the events per second the page took and its longest task.
// BenchmarkStreamDiscard is the same with a page that drops the events
// before the widget sees them: the transport's own limit, to compare with.
func BenchmarkWidgetStream(b *testing.B)  { benchStream(b, false) }
func BenchmarkStreamDiscard(b *testing.B) { benchStream(b, true) }

// discardEventsJS makes the page's WebSocket drop `events` messages before
// any handler sees them.
const discardEventsJS = `(() => {
  const WS = window.WebSocket;
  window.WebSocket = function (u, p) {
    const ws = new WS(u, p);
    let h = null;
    Object.defineProperty(ws, "onmessage", {
      set(fn) { h = fn; ws.addEventListener("message", (e) => { if (!(typeof e.data === "string" && e.data.startsWith('{"type":"events"'))) h(e); }); },
      get() { return h; },
    });
    return ws;
  };
})()`

func benchStream(b *testing.B, discard bool) {
	s := site(b)
	ctx := browser(b)
	if discard {
		if _, err := chromedp.Call(ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: discardEventsJS}); err != nil {
			b.Fatal(err)
		}
	}
	f := &fakeStream{variants: 4, calls: 28_000}
	base := listenFake(b, s, f)
	events := 0
	var took time.Duration
	var longest float64
	for b.Loop() {
		r, err := streamRun(ctx, base, firstLabPage(b, s), f)
		if err != nil {
			b.Fatal(err)
		}
		if discard {
			events += f.variants * f.eventsPerVariant()
		} else {
			events += r.events
		}
		took += r.elapsed
		longest = max(longest, r.longestTask)
	}
	b.ReportMetric(float64(events)/took.Seconds(), "events/s")
	b.ReportMetric(longest, "longest-task-ms")
}

// A real run (here from a stand-in with the server's messages): the page
// says it is queued, then shows each measurement with the model's value and
// the error beside it, and the phase comparison.
func TestBrowserRealRun(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	f := &fakeStream{variants: 2, calls: 40}
	base := listenFake(t, s, f)
	p := firstLabPage(t, s)
	id := "sim-" + p.lab.Blocks[0].ID
	if err := chromedp.Do(ctx, chromedp.Navigate(base+p.url)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.dataset.simServer === "live" && document.documentElement.dataset.simWidgets === "all"`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.__statuses = [];
new MutationObserver(() => __statuses.push(document.querySelector("#%s .sim-status").textContent)).observe(document.querySelector("#%s .sim-status"), {childList: true, characterData: true, subtree: true});`, id, id)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector("#%s[data-predict=pending] .pr-skip")?.click()`, id)),
		chromedp.Click(chromedp.CSS("#"+id+" .sim-run-real"))); err != nil {
		t.Fatal(err)
	}
	raw, err := chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(`(() => { const f = document.getElementById(%q); if (f.dataset.ready !== "1") return false;
return JSON.stringify({statuses: __statuses, models: f.querySelectorAll(".sim-summary td .model").length, errs: [...f.querySelectorAll(".sim-summary td .err")].map(e => e.textContent),
  compare: f.querySelectorAll(".sim-compare tbody tr").length, bad: f.querySelectorAll(".sim-compare tbody tr.bad").length,
  caption: f.querySelector(".sim-compare caption").textContent, noted: [...f.querySelectorAll(".sim-compare tbody tr[title]")].map(r => r.lastChild.textContent),
  unsure: [...f.querySelectorAll(".sim-inconclusive")].map(p => p.textContent),
  measured: +f.querySelector('.sim-summary tr[data-metric="total_ms.p50"] td[data-variant="v2"]').dataset.value}); })()`, id), chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	if png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#"+id+" .sim-bottom"))); err == nil {
		os.MkdirAll(filepath.Join(s.root, "artifacts", "browser"), 0o755)
		os.WriteFile(filepath.Join(s.root, "artifacts", "browser", "real-run-summary.png"), png, 0o644)
	}
	var got struct {
		Statuses []string
		Models   int
		Errs     []string
		Compare  int
		Bad      int
		Caption  string
		Noted    []string
		Unsure   []string
		Measured float64
	}
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(got.Statuses, func(s string) bool { return strings.Contains(s, "Queued") && strings.Contains(s, "1") }) {
		t.Errorf("the page never said the run was queued: %q", got.Statuses)
	}
	if got.Models == 0 || len(got.Errs) == 0 {
		t.Errorf("no model values or errors beside the measurements (%d, %v)", got.Models, got.Errs)
	}
	if !slices.Contains(got.Errs, "+43%") {
		t.Errorf("v2's median call (0.43 ms measured, 0.3 ms modelled) should show +43%%: %v", got.Errs)
	}
	if got.Measured != 0.43 {
		t.Errorf("v2's measured median is %v, want the stats' 0.43", got.Measured)
	}
	if got.Compare != 6 || got.Bad != 1 {
		t.Errorf("phase comparison: %d rows, %d out of tolerance; want 6 and 1", got.Compare, got.Bad)
	}
	// A median that falls between new and reused calls is shown with its
	// reason and no verdict; the caption says what the harness adds.
	if len(got.Noted) != 2 || got.Noted[0] != "·" {
		t.Errorf("rows shown without a verdict: %q, want 2 marked ·", got.Noted)
	}
	if !strings.Contains(got.Caption, "0.25 ms") {
		t.Errorf("caption %q does not give the harness's overhead", got.Caption)
	}
	// The variant that missed on a busy machine is said to be
	// inconclusive, in words, with the CPUs other programs took.
	if len(got.Unsure) != 1 || !strings.Contains(got.Unsure[0], "variant 2: inconclusive") || !strings.Contains(got.Unsure[0], "1.84 CPUs") {
		t.Errorf("inconclusive notes %q, want one for variant 2 with 1.84 CPUs", got.Unsure)
	}
}
