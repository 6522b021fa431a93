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
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
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
}

func (f *fakeStream) eventsPerVariant() int { return f.calls / 4 * 7 }

// events writes variant v's events, batch by batch, to emit.
func (f *fakeStream) events(emit func(batch []byte, n int)) {
	buf := make([]byte, 0, 512*260)
	n := 0
	add := func(s string) {
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, s...)
		if n++; n == 512 {
			emit(buf, n)
			buf, n = buf[:0], 0
		}
	}
	conn := 0
	for i := 0; i < f.calls; i++ {
		start := float64(i) * 0.4
		fresh := i%4 == 0
		port := 32768 + conn%28000
		total, dns, connect, tls, nc := 0.3, 0.0, 0.0, 0.0, 0
		if fresh {
			conn++
			port = 32768 + conn%28000
			total, dns, connect, tls, nc = 1.2, 0.2, 0.5, 0.9, 1
			add(fmt.Sprintf(`{"kind":"open","at_ms":%g,"req":%d,"call":1,"worker":1,"conn":%d,"local_port":%d}`, start+0.2, i+1, conn, port))
		}
		add(fmt.Sprintf(`{"kind":"call","at_ms":%g,"req":%d,"call":1,"worker":1,"conn":%d,"new_conn":%t,"reused":%t,"num_connects":%d,"start_ms":%g,"namelookup_ms":%g,"connect_ms":%g,"appconnect_ms":%g,"starttransfer_ms":%g,"total_ms":%g,"local_port":%d,"error":""}`,
			start+total, i+1, conn, fresh, !fresh, nc, start, dns, connect, tls, total-0.1, total, port))
		if i%4 == 3 {
			at := start + total
			add(fmt.Sprintf(`{"kind":"close","at_ms":%g,"conn":%d,"local_port":%d,"by":"client","reason":"no-reuse"}`, at, conn, port))
			add(fmt.Sprintf(`{"kind":"time_wait","at_ms":%g,"local_port":%d,"by":"client"}`, at, port))
		}
	}
	if n > 0 {
		emit(buf, n)
	}
}

func (f *fakeStream) handler(public string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(public)))
	up := websocket.Upgrader{}
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			var m struct{ Type, ID string }
			if err := c.ReadJSON(&m); err != nil {
				return
			}
			if m.Type != "run" {
				continue
			}
			f.run(c, m.ID)
		}
	})
	return mux
}

func (f *fakeStream) run(c *websocket.Conn, id string) {
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
	for v, name := range names {
		f.events(func(batch []byte, n int) {
			msg := head + strconv.Quote(name) + `,"events":[` + string(batch) + `]}`
			if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				return
			}
			sent += n
			if f.rate > 0 {
				if ahead := time.Duration(float64(sent)/f.rate*float64(time.Second)) - time.Since(begin); ahead > 0 {
					time.Sleep(ahead)
				}
			}
		})
		calls := f.calls
		done = append(done, map[string]any{"name": name, "label": "variant " + strconv.Itoa(v+1), "summary": map[string]any{
			"requests": calls, "calls": calls, "connects": (calls + 3) / 4, "reused": calls - (calls+3)/4, "errors": 0, "port_errors": 0,
			"races": 0, "time_wait_peak": (calls + 3) / 4, "server_time_wait_peak": 0, "open_peak": 1, "throughput_rps": 2500, "duration_s": 0,
			"first_port_error_s": nil, "recovered_s": nil, "total_ms": map[string]any{"p50": 0.3, "p90": 1.2, "p99": 1.2, "mean": 0.525}}})
	}
	c.WriteJSON(map[string]any{"type": "done", "id": id, "variants": done, "checks": []any{}, "elapsed_ms": float64(time.Since(begin).Microseconds()) / 1000})
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
func BenchmarkWidgetStream(b *testing.B) {
	s := site(b)
	ctx := browser(b)
	f := &fakeStream{variants: 4, calls: 28_000}
	base := listenFake(b, s, f)
	var events int
	var took time.Duration
	var longest float64
	for b.Loop() {
		r, err := streamRun(ctx, base, firstLabPage(b, s), f)
		if err != nil {
			b.Fatal(err)
		}
		events += r.events
		took += r.elapsed
		longest = max(longest, r.longestTask)
	}
	b.ReportMetric(float64(events)/took.Seconds(), "events/s")
	b.ReportMetric(longest, "longest-task-ms")
}
