package class

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connlab/connlab/sim/web"
	"github.com/gorilla/websocket"
)

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"Ann":                       "Ann",
		"  Ann   Lee  ":             "Ann Lee",
		"Ann\u202eeeL\u200b":        "AnneeL", // bidi override, zero-width space
		"A\x00B\x1b[31mC":           "AB[31mC",
		"김\t민준":                     "김 민준",
		"<script>alert(1)</script>": "<script>alert(1)</script>", // the pages escape; the name is kept as typed
		strings.Repeat("x", 40):     strings.Repeat("x", 32),
		strings.Repeat("가", 31) + " " + "나나": strings.Repeat("가", 31),
		"e\u0301":     "e\u0301", // a combining mark stays
		"\xff\xfeBob": "Bob",
	} {
		got, err := SanitizeName(in, 32)
		if err != nil || got != want {
			t.Errorf("SanitizeName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "   ", "\u202e\u200b", "\x00\x01"} {
		if _, err := SanitizeName(bad, 32); err == nil {
			t.Errorf("SanitizeName(%q) accepted", bad)
		}
	}
}

// checkHistogram verifies that h counts exactly values.
func checkHistogram(t *testing.T, h Histogram, values []float64) {
	t.Helper()
	if h.Count != len(values) {
		t.Errorf("count %d, want %d", h.Count, len(values))
	}
	if len(values) == 0 {
		return
	}
	if len(h.Edges) != len(h.Counts)+1 {
		t.Fatalf("%d edges for %d bins", len(h.Edges), len(h.Counts))
	}
	want := make([]int, len(h.Counts))
	below, above := 0, 0
	last := h.Edges[len(h.Edges)-1]
	for _, v := range values {
		switch {
		case v < h.Edges[0]:
			below++
		case v > last:
			above++
		default:
			for i := range h.Counts {
				if v >= h.Edges[i] && (v < h.Edges[i+1] || i == len(h.Counts)-1) {
					want[i]++
					break
				}
			}
		}
	}
	if fmt.Sprint(want) != fmt.Sprint(h.Counts) || below != h.Below || above != h.Above {
		t.Errorf("counts %v below %d above %d; want %v, %d, %d (edges %v)", h.Counts, h.Below, h.Above, want, below, above, h.Edges)
	}
	if len(h.Counts) > 11 {
		t.Errorf("%d bins", len(h.Counts))
	}
}

func TestNumberHistogram(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		n := r.IntN(60)
		vals := make([]float64, n)
		scale := math.Pow(10, float64(r.IntN(8)-3))
		for i := range vals {
			vals[i] = math.Round(r.NormFloat64()*scale*100) / 100
			if r.IntN(20) == 0 {
				vals[i] *= 1e6 // an absurd guess
			}
		}
		checkHistogram(t, NumberHistogram(vals, 10), vals)
	}
	same := []float64{22, 22, 22}
	h := NumberHistogram(same, 10)
	checkHistogram(t, h, same)
	if len(h.Counts) != 1 || h.Counts[0] != 3 {
		t.Errorf("identical values: %+v", h)
	}
	// One absurd guess among many does not squash the others into one bin.
	vals := []float64{10, 12, 14, 15, 16, 18, 20, 22, 24, 25, 26, 28, 30, 1e9}
	h = NumberHistogram(vals, 10)
	checkHistogram(t, h, vals)
	if h.Above != 1 || len(h.Counts) < 5 {
		t.Errorf("outlier: %+v", h)
	}
}

// testClass starts a class on the labs' exercises behind an httptest server.
func testClass(t *testing.T, opt Options) (*Server, *httptest.Server) {
	t.Helper()
	cat, err := LoadCatalog(web.NewIndex([]string{"../../labs"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	opt.Catalog = cat
	if opt.Token == "" {
		opt.Token = "teacher-secret"
	}
	if opt.Code == "" {
		opt.Code = testCode
	}
	if opt.Limits.PerAddress == 0 {
		opt.Limits.PerAddress = 1000 // every test student comes from 127.0.0.1
	}
	cs, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	cs.Mount(mux)
	mux.Handle("GET /exercise/api", cat.APIHandler(func() bool { return true }))
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		cs.Close()
		hs.Close()
		if n := cs.Conns(); n != 0 {
			t.Errorf("%d connections left after Close", n)
		}
	})
	return cs, hs
}

func dial(t *testing.T, hs *httptest.Server, query string, header http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	u := "ws" + strings.TrimPrefix(hs.URL, "http") + "/class/ws" + query
	return websocket.DefaultDialer.Dial(u, header)
}

// read returns the next message of one of the given types, skipping others.
func read(t *testing.T, c *websocket.Conn, types ...string) map[string]any {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		var m map[string]any
		if err := c.ReadJSON(&m); err != nil {
			t.Fatalf("waiting for %v: %v", types, err)
		}
		for _, ty := range types {
			if m["type"] == ty {
				return m
			}
		}
	}
}

const php = "php-persistent-share"

// testCode is the join code of the test classes.
const testCode = "TEST-CODE"

// TestClassOfFifty: fifty students join over WebSocket and send their
// predictions; the teacher's histograms count exactly what was sent, and
// hide the answers until the teacher reveals; a student who tries to
// reveal or floods is refused; the reveal reaches every student with their
// own result.
func TestClassOfFifty(t *testing.T) {
	const n = 50
	cs, hs := testClass(t, Options{Limits: Limits{MaxStudents: n}})
	teacher, _, err := dial(t, hs, "?teacher=teacher-secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer teacher.Close()
	read(t, teacher, "state")
	teacher.WriteJSON(map[string]any{"type": "watch", "lab": php})

	students := make([]*websocket.Conn, n)
	values := make([]float64, n)
	choices := make([]int, 4)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		values[i] = float64(10 + i)
		choices[i%4]++
		c, _, err := dial(t, hs, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		students[i] = c
		defer c.Close()
		wg.Add(1)
		go func(i int, c *websocket.Conn) {
			defer wg.Done()
			name := fmt.Sprintf("  student\u202e %d ", i)
			c.WriteJSON(map[string]any{"type": "join", "code": testCode, "name": name})
			var joined map[string]any
			if err := c.ReadJSON(&joined); err != nil || joined["type"] != "joined" || joined["name"] != fmt.Sprintf("student %d", i) {
				errs <- fmt.Errorf("student %d: join: %v %v", i, joined, err)
				return
			}
			for _, a := range []map[string]any{
				{"exercise": "warm-call", "value": fmt.Sprint(values[i])},
				{"exercise": "cli-script", "value": i%4 + 1},
				{"exercise": "cold-call", "value": fmt.Sprintf("because %d", i)},
			} {
				a["type"], a["lab"] = "answer", php
				c.WriteJSON(a)
				var ack map[string]any
				if err := c.ReadJSON(&ack); err != nil || ack["type"] != "ack" {
					errs <- fmt.Errorf("student %d: %v: %v %v", i, a, ack, err)
					return
				}
			}
		}(i, c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	// The teacher's page converges on fifty answers per exercise.
	state := func(done func(ex map[string]map[string]any) bool) (map[string]any, map[string]map[string]any) {
		for {
			s := read(t, teacher, "state")
			exs := map[string]map[string]any{}
			for _, e := range s["exercises"].([]any) {
				em := e.(map[string]any)
				exs[em["id"].(string)] = em
			}
			if s["lab"] == php && done(exs) {
				return s, exs
			}
		}
	}
	count := func(e map[string]any) int { return int(e["histogram"].(map[string]any)["count"].(float64)) }
	s, exs := state(func(exs map[string]map[string]any) bool {
		return count(exs["warm-call"]) == n && count(exs["cli-script"]) == n && count(exs["cold-call"]) == n
	})
	if s["students"].(float64) != n || len(s["names"].([]any)) != n {
		t.Errorf("students %v", s["students"])
	}
	checkHistogram(t, toHistogram(exs["warm-call"]["histogram"].(map[string]any)), values)
	ch := exs["cli-script"]["histogram"].(map[string]any)
	if fmt.Sprint(ch["counts"]) != fmt.Sprint([]any{13.0, 13.0, 12.0, 12.0}) || fmt.Sprint(choices) != "[13 13 12 12]" {
		t.Errorf("choice counts %v, sent %v", ch["counts"], choices)
	}
	eh := exs["cold-call"]["histogram"].(map[string]any)
	if len(eh["texts"].([]any)) != 40 || eh["more"].(float64) != 10 {
		t.Errorf("explain: %d texts, %v more", len(eh["texts"].([]any)), eh["more"])
	}
	for id, e := range exs {
		if e["revealed"] == true || e["answer"] != nil {
			t.Errorf("%s: answer shown before the reveal: %v", id, e["answer"])
		}
	}

	// A student cannot reveal.
	students[0].WriteJSON(map[string]any{"type": "reveal", "lab": php, "exercise": "warm-call"})
	if m := read(t, students[0], "error"); !strings.Contains(m["message"].(string), "only the teacher can reveal") {
		t.Errorf("student reveal: %v", m)
	}
	// A student who floods is refused and then cut off; the histogram
	// keeps one answer per student.
	// The flood waits to read its first refusal before it goes on to be
	// cut off: the server closes its socket with the rest of the flood
	// unread, so the kernel resets the connection, and a reply the client
	// has not read by then is lost.
	flood := students[1]
	refusedc, closedc := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(closedc)
		flood.SetReadDeadline(time.Now().Add(15 * time.Second))
		refused := false
		for {
			var m map[string]any
			if err := flood.ReadJSON(&m); err != nil {
				return
			}
			if m["type"] == "error" && strings.Contains(m["message"].(string), "too many messages") && !refused {
				refused = true
				close(refusedc)
			}
		}
	}()
	answer := map[string]any{"type": "answer", "lab": php, "exercise": "warm-call", "value": "11"}
	refused := false
	for i := 0; i < 1000; i++ {
		if i == 30 { // past the burst of 20, short of the 50 refusals that end it
			select {
			case <-refusedc:
				refused = true
			case <-closedc:
			case <-time.After(15 * time.Second):
			}
		}
		if err := flood.WriteJSON(answer); err != nil {
			break
		}
	}
	closed := false
	select {
	case <-closedc:
		closed = true
	case <-time.After(15 * time.Second):
	}
	if !refused || !closed {
		t.Errorf("flood: refused %v, closed %v", refused, closed)
	}
	// One more student is one too many.
	extra, _, err := dial(t, hs, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	extra.WriteJSON(map[string]any{"type": "join", "code": testCode, "name": "late"})
	if m := read(t, extra, "error", "joined"); m["type"] != "error" || !strings.Contains(m["message"].(string), "class is full") {
		t.Errorf("51st student: %v", m)
	}
	extra.Close()

	// The teacher reveals: each connected student gets the answer and
	// their own result; the teacher sees how many were right.
	teacher.WriteJSON(map[string]any{"type": "reveal", "lab": php, "exercise": "warm-call"})
	for i, c := range students {
		if i == 1 {
			continue // the flooder was cut off
		}
		m := read(t, c, "reveal")
		ex := m["exercise"].(map[string]any)
		yours := m["yours"].(map[string]any)
		ok := math.Abs(values[i]-22) <= 2.2
		if ex["answer"] != 22.0 || ex["id"] != "warm-call" || yours["ok"] != ok || yours["value"] != fmt.Sprint(values[i]) {
			t.Errorf("student %d: reveal %v, yours %v", i, ex["answer"], yours)
		}
	}
	_, exs = state(func(exs map[string]map[string]any) bool { return exs["warm-call"]["revealed"] == true })
	if exs["warm-call"]["right"].(float64) != 5 || exs["warm-call"]["answer"].(map[string]any)["answer"] != 22.0 {
		t.Errorf("after the reveal: right %v, answer %v", exs["warm-call"]["right"], exs["warm-call"]["answer"])
	}
	if exs["cli-script"]["revealed"] == true {
		t.Error("revealing one exercise revealed another")
	}
	// Too late to answer.
	students[2].WriteJSON(map[string]any{"type": "answer", "lab": php, "exercise": "warm-call", "value": "22"})
	if m := read(t, students[2], "error", "ack"); m["type"] != "error" || !strings.Contains(m["message"].(string), "already revealed") {
		t.Errorf("answer after the reveal: %v", m)
	}
	if cs.Conns() < n {
		t.Errorf("%d connections open", cs.Conns())
	}
}

func toHistogram(m map[string]any) Histogram {
	h := Histogram{Count: int(m["count"].(float64))}
	for _, e := range m["edges"].([]any) {
		h.Edges = append(h.Edges, e.(float64))
	}
	for _, c := range m["counts"].([]any) {
		h.Counts = append(h.Counts, int(c.(float64)))
	}
	if v, ok := m["below"].(float64); ok {
		h.Below = int(v)
	}
	if v, ok := m["above"].(float64); ok {
		h.Above = int(v)
	}
	return h
}

// TestClassRefuses: foreign pages, wrong tokens, bad messages and huge
// messages are refused with a reason; nothing is left open.
func TestClassRefuses(t *testing.T) {
	cs, hs := testClass(t, Options{})
	if _, resp, err := dial(t, hs, "", http.Header{"Origin": {"http://evil.example"}}); err == nil || resp.StatusCode != 403 {
		t.Errorf("foreign origin: %v", err)
	}
	if _, resp, err := dial(t, hs, "?teacher=guess", nil); err == nil || resp.StatusCode != 403 {
		t.Errorf("wrong token: %v", err)
	}
	c, _, err := dial(t, hs, "", http.Header{"Origin": {hs.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		msg   string
		field string
		want  string
	}{
		{`{"type":"answer","lab":"` + php + `","exercise":"warm-call","value":"1"}`, "type", "join first"},
		{`{"type":"join","name":"   "}`, "name", "display name"},
		{`not json`, "", "not a JSON message"},
		{`{"type":"frobnicate"}`, "type", "unknown message type"},
		{`{"type":"join","name":"Ann"}`, "code", "needs its join code"},
		{`{"type":"join","name":"Ann","code":"nope-nope"}`, "code", "wrong join code"},
		{`{"type":"join","name":"Ann","code":"test code"}`, "", ""},
		{`{"type":"join","name":"Ann","code":"TESTCODE"}`, "type", "already joined"},
		{`{"type":"answer","lab":"nope","exercise":"warm-call","value":"1"}`, "lab", `no lab "nope"`},
		{`{"type":"answer","lab":"` + php + `","exercise":"nope","value":"1"}`, "exercise", `no exercise "nope"`},
		{`{"type":"answer","lab":"` + php + `","exercise":"warm-call","value":"fast"}`, "value", "want a number (in ms)"},
		{`{"type":"answer","lab":"` + php + `","exercise":"warm-call","value":{"x":1}}`, "value", "string or a number"},
		{`{"type":"answer","lab":"` + php + `","exercise":"cli-script","value":9}`, "value", "1 to 4"},
		{`{"type":"answer","lab":"` + php + `","exercise":"warm-call","value":1e300}`, "value", "below 10^15"},
		{`{"type":"answer","lab":"` + php + `","exercise":"cold-call","value":"` + strings.Repeat("x", 1001) + `"}`, "value", "at most 1000 bytes"},
	} {
		c.WriteMessage(websocket.TextMessage, []byte(tc.msg))
		m := read(t, c, "error", "joined")
		if tc.want == "" {
			if m["type"] != "joined" {
				t.Errorf("%s: %v", tc.msg, m)
			}
			continue
		}
		if m["type"] != "error" || m["field"] != nilIfEmpty(tc.field) || !strings.Contains(m["message"].(string), tc.want) {
			t.Errorf("%.60s: got %v; want field %q, %q", tc.msg, m, tc.field, tc.want)
		}
	}
	// A message over the size limit closes the connection.
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"answer","value":"`+strings.Repeat("9", 5000)+`"}`))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			break
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for cs.Conns() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if cs.Conns() != 0 {
		t.Errorf("%d connections after the big message", cs.Conns())
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TestPerStudentSeeds: each student gets numbers of their own; the teacher's
// histogram shows predictions relative to each student's answer; a student
// who reconnects with their token keeps their seed and answers.
func TestPerStudentSeeds(t *testing.T) {
	_, hs := testClass(t, Options{PerStudent: true})
	type stu struct {
		c      *websocket.Conn
		seed   uint64
		token  string
		answer float64
	}
	var all []*stu
	seeds := map[uint64]bool{}
	for i := 0; i < 6; i++ {
		c, _, err := dial(t, hs, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.WriteJSON(map[string]any{"type": "join", "code": testCode, "name": "same name"})
		j := read(t, c, "joined")
		if i > 0 && j["name"] != fmt.Sprintf("same name %d", i+1) {
			t.Errorf("duplicate name became %v", j["name"])
		}
		s := &stu{c: c, seed: uint64(j["seed"].(float64)), token: j["token"].(string)}
		seeds[s.seed] = true
		// The page asks for its seeded exercise; in class mode the answer is hidden.
		resp, err := http.Get(fmt.Sprintf("%s/exercise/api?lab=%s&seed=%d", hs.URL, php, s.seed))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		all = append(all, s)
	}
	if len(seeds) < 5 {
		t.Errorf("seeds %v", seeds)
	}
	teacher, _, _ := dial(t, hs, "?teacher=teacher-secret", nil)
	defer teacher.Close()
	teacher.WriteJSON(map[string]any{"type": "watch", "lab": php})
	// Everyone predicts 22 ms; relative to their own answer that differs.
	for _, s := range all {
		s.c.WriteJSON(map[string]any{"type": "answer", "lab": php, "exercise": "warm-call", "value": 22})
		read(t, s.c, "ack")
	}
	// Reconnecting with the token keeps the student and their answer.
	again, _, _ := dial(t, hs, "", nil)
	defer again.Close()
	again.WriteJSON(map[string]any{"type": "join", "code": testCode, "name": "ignored", "token": all[0].token})
	j := read(t, again, "joined")
	if uint64(j["seed"].(float64)) != all[0].seed || j["name"] != "same name" || len(j["answered"].([]any)) != 1 {
		t.Errorf("rejoin: %v", j)
	}
	teacher.WriteJSON(map[string]any{"type": "reveal", "lab": php, "exercise": "warm-call"})
	var rel []float64
	for _, s := range all {
		m := read(t, s.c, "reveal")
		s.answer = m["exercise"].(map[string]any)["answer"].(float64)
		rel = append(rel, math.Round(22/s.answer*1000)/10)
	}
	for {
		st := read(t, teacher, "state")
		var warm map[string]any
		for _, e := range st["exercises"].([]any) {
			if e.(map[string]any)["id"] == "warm-call" {
				warm = e.(map[string]any)
			}
		}
		if warm == nil {
			continue // a state from before the watch
		}
		h := warm["histogram"].(map[string]any)
		if warm["revealed"] != true || h["count"].(float64) != 6 {
			continue
		}
		if h["relative"] != true || h["unit"] != "%" {
			t.Errorf("histogram %v", h)
		}
		checkHistogram(t, toHistogram(h), rel)
		break
	}
}

// TestStopsWithTheServer: when `sim serve` shuts down, its base context
// ends, and every class connection closes without Close being called.
func TestStopsWithTheServer(t *testing.T) {
	cat, err := LoadCatalog(web.NewIndex([]string{"../../labs"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := New(Options{Catalog: cat, Token: "tok", Code: testCode})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mux := http.NewServeMux()
	cs.Mount(mux)
	base, stop := context.WithCancel(context.Background())
	hs := httptest.NewUnstartedServer(mux)
	hs.Config.BaseContext = func(net.Listener) context.Context { return base }
	hs.Start()
	defer hs.Close()
	var conns []*websocket.Conn
	for _, q := range []string{"", "", "?teacher=tok"} {
		c, _, err := dial(t, hs, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	conns[0].WriteJSON(map[string]any{"type": "join", "code": testCode, "name": "a"})
	read(t, conns[0], "joined")
	// The server counts a connection once its handler has run on past the
	// upgrade that the dial returned on: a busy machine can leave the last
	// one uncounted yet.
	for deadline := time.Now().Add(5 * time.Second); cs.Conns() != 3 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if cs.Conns() != 3 {
		t.Fatalf("%d connections", cs.Conns())
	}
	stop()
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Error("a connection stayed open after the server's context ended")
				}
				break
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for cs.Conns() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if cs.Conns() != 0 {
		t.Errorf("%d connections left", cs.Conns())
	}
}

// TestPages: the students' landing page links every lab with exercises in
// both languages; /class/info says class mode is on.
func TestPages(t *testing.T) {
	_, hs := testClass(t, Options{PerStudent: true})
	get := func(path string) (int, string) {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	code, body := get("/class/")
	for _, want := range []string{`href="/labs/php-persistent-share/#exercise-list"`, `href="/ko/labs/port-exhaustion/#exercise-list"`, `maxlength="32"`} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/class/: %d, lacks %s", code, want)
		}
	}
	if code, body := get("/class/info"); code != 200 || !strings.Contains(body, `"per_student":true`) {
		t.Errorf("/class/info: %d %s", code, body)
	}
	if code, _ := get("/class/teacher"); code != 403 {
		t.Errorf("the teacher's page without a token: %d", code)
	}
}
