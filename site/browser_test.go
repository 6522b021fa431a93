package site

// Browser tests: the built site in a real Chromium, against `sim serve`
// (built without the race detector, see simBinary). For every page with ```sim blocks, in both languages, each
// block is run with the Run button and the waterfall, the calls table, the
// summary and the expectations are checked against the model run the same
// way in the test (sim run's numbers). A screenshot of each page's first
// widget is kept under artifacts/browser/ (git-ignored). Everything started
// (the server, the browser) is stopped at the end, and the test checks it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/connlab/connlab/internal/testutil"
	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/lab"
	"github.com/connlab/connlab/sim/server"
)

// chromiumPath finds Debian's chromium (CI installs it) or another Chrome.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser starts a headless Chromium with the flags the house rules give,
// in a fresh profile, and returns a tab. The cleanup stops it and checks
// that no process of that profile is left.
func browser(t testing.TB) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("no chromium on PATH (CI installs it: .ci/run)")
	}
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 900),
		chromedp.Flag("lang", "en-US"),
		// Chromium makes its profile lock's directory
		// (org.chromium.Chromium.XXXXXX) in TMPDIR and removes it only
		// when it exits cleanly; the allocator kills it. In the test's
		// own folder, it goes when the test ends.
		chromedp.Env("TMPDIR=" + t.TempDir()),
	}
	// V8's own flags, to measure with a setting a reader's browser may not
	// have (benchmarks): CONNLAB_JS_FLAGS=--wasm-caching-timeout-ms=0, say.
	if f := os.Getenv("CONNLAB_JS_FLAGS"); f != "" {
		opts = append(opts, chromedp.Flag("js-flags", f))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tab, cancelTab := chromedp.NewContext(actx)
	// A test that waits for something that never comes (an element a
	// prediction keeps hidden, say) fails on its own after browserTimeout
	// instead of stopping the whole package at go test's timeout.
	ctx, cancelTimeout := context.WithTimeout(tab, browserTimeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
		// The allocator waits for the browser to exit; check that it did.
		deadline := time.Now().Add(10 * time.Second)
		for {
			left := processesWith(profile)
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("chromium processes still running after the test: %v", left)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return ctx
}

// browserTimeout bounds one test's use of its browser.
const browserTimeout = 8 * time.Minute

// processesWith lists the pids whose command line mentions s.
func processesWith(s string) []string {
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		cmd, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte(s)) {
			out = append(out, d.Name())
		}
	}
	return out
}

// serve starts `sim serve` (with any extra flags) on a free loopback port
// over the built site and returns its base URL and what it prints; the
// cleanup stops it and checks it stopped (testutil.StartServe).
func serve(t testing.TB, s *builtSite, extra ...string) (string, *testutil.SyncBuffer) {
	t.Helper()
	args := append([]string{"--public", s.public, "--labs", filepath.Join(s.root, "labs") + "," + filepath.Join(s.root, "content")}, extra...)
	srv := testutil.StartServe(t, s.root, nil, args...)
	return srv.Base, srv.Out
}

// expected is what the model gives for one block, as the server streams it.
type expected struct {
	variants []string
	calls    map[string][]sim.Event // the call events the page receives, in the waterfall's order
	summary  map[string]map[string]any
	checks   []lab.Check
}

// expectBlocks gives, for each of a page's blocks, sim run's summaries and
// expectations (the build's `sim run --json`) and each variant's call
// events among the first ModelEvents events (what the server streams before
// it truncates), in start order as the waterfall draws them. The model
// stops as soon as it has emitted those events.
func expectBlocks(t *testing.T, s *builtSite, p sitePage) map[string]*expected {
	t.Helper()
	limit := server.DefaultLimits.ModelEvents
	out := map[string]*expected{}
	cliOut := s.outputs[p.name]
	for _, b := range p.lab.Blocks {
		x := &expected{calls: map[string][]sim.Event{}, summary: map[string]map[string]any{}}
		for _, cb := range cliOut.Blocks {
			if cb.ID != b.ID {
				continue
			}
			x.checks = cb.Checks
			for _, v := range cb.Variants {
				m := map[string]any{}
				for k, val := range v.Summary {
					m[k] = val
				}
				if v.Error != "" {
					m["error"] = v.Error
				}
				x.summary[v.Name] = m
			}
		}
		scns, errs, err := b.Scenarios(nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range b.Variants {
			x.variants = append(x.variants, v.Name)
			if errs[i] != nil {
				continue
			}
			ctx, cancel := context.WithCancel(context.Background())
			n := 0
			var cs []sim.Event
			_, err := sim.Run(ctx, *scns[i], sim.Options{Seed: 1, Sink: func(e *sim.Event) {
				if n++; n > limit {
					cancel()
					return
				}
				if e.Kind == sim.KindCall {
					cs = append(cs, *e)
				}
			}})
			cancel()
			if err != nil && n <= limit {
				t.Fatalf("block %s variant %s: %v", b.ID, v.Name, err)
			}
			// As the waterfall orders them: by start as the page receives
			// it (whole microseconds), then by request.
			slices.SortStableFunc(cs, func(a, b sim.Event) int {
				if as, bs := a.Start/time.Microsecond, b.Start/time.Microsecond; as != bs {
					return int(as - bs)
				}
				return a.Req - b.Req
			})
			x.calls[v.Name] = cs
		}
		out[b.ID] = x
	}
	return out
}

// widgetState is what the page shows of one widget after a run.
type widgetState struct {
	Ready bool `json:"ready"`
	// Run is the widget's run state: "" before any run, "running", "idle".
	Run     string `json:"run"`
	State   string `json:"state"`
	Status  string `json:"status"`
	Dropped int    `json:"dropped"`
	Panes   []struct {
		Name string
		Rows int
	} `json:"panes"`
	Calls   map[string][][5]float64       `json:"calls"`
	Summary map[string]map[string]float64 `json:"summary"`
	Checks  []string                      `json:"checks"`
	// Hidden is how many pixels of the summary table its place cuts off
	// (the reader would have to scroll it sideways).
	Hidden int `json:"hidden"`
}

const readWidgetJS = `(() => {
  const f = document.getElementById(%q);
  if (!f) return JSON.stringify({state: "missing"});
  const st = f.querySelector(".sim-status");
  const panes = [...f.querySelectorAll(".sim-pane")].map(p => ({Name: p.dataset.variant, Rows: +(p.querySelector(".sim-wf").dataset.rows || 0)}));
  const calls = {};
  for (const tb of f.querySelectorAll("table.sim-calls-table")) calls[tb.dataset.variant] = [...tb.querySelectorAll("tbody tr")].map(tr => [+tr.dataset.req, +tr.dataset.call, +tr.dataset.conn, +tr.dataset.new, +tr.dataset.total]);
  const summary = {};
  for (const tr of f.querySelectorAll(".sim-summary tr[data-metric]")) for (const td of tr.querySelectorAll("td[data-value]")) (summary[td.dataset.variant] ||= {})[tr.dataset.metric] = +td.dataset.value;
  const checks = [...f.querySelectorAll(".sim-checks li")].map(li => li.className);
  const sum = f.querySelector(".sim-summary");
  const hidden = sum ? sum.scrollWidth - sum.clientWidth : 0;
  return JSON.stringify({ready: f.dataset.ready === "1", run: f.dataset.state || "", state: st ? st.dataset.state || "" : "", status: st ? st.textContent : "", dropped: +(f.dataset.dropped || 0), panes, calls, summary, checks, hidden});
})()`

func readWidget(ctx context.Context, id string) (*widgetState, error) {
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(readWidgetJS, id)))
	if err != nil {
		return nil, err
	}
	var w widgetState
	return &w, json.Unmarshal([]byte(raw), &w)
}

// runWidget presses a widget's Run button and waits until the run is on screen.
func runWidget(ctx context.Context, id string) (*widgetState, error) {
	// Skip the block's prediction, if it asks one (its results are hidden
	// until then: teach_browser_test.go tests that), and open the calls
	// table, which the widget fills when it is open.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector("#%s[data-predict=pending] .pr-skip")?.click(); document.getElementById(%q).scrollIntoView(); document.querySelector("#%s .sim-calls").open = true`, id, id, id)),
		chromedp.Click(chromedp.CSS("#"+id+" .sim-run"))); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		w, err := readWidget(ctx, id)
		if err != nil {
			return nil, err
		}
		if w.Ready || w.State == "error" || w.State == "noserver" {
			return w, nil
		}
		if time.Now().After(deadline) {
			return w, fmt.Errorf("%s: no result within 2 minutes (status %q)", id, w.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Every lab page in both languages: press Run on each block (the first in a
// translation); the waterfall has one row per call the server sent, the
// calls table has the model's calls in order with their connection and
// time, the summary and the expectations are sim run's; the console stays
// free of errors and warnings.
func TestBrowserLabs(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	// The page's head starts the model's worker before it knows that a
	// server answers; with one, the worker stops its fetches quietly.
	con := watchConsole(t, ctx)
	base, _ := serve(t, s)
	artifacts := filepath.Join(s.root, "artifacts", "browser")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]*expected{}
	for _, p := range s.pages {
		t.Run(p.lang+"/"+p.name, func(t *testing.T) {
			if want[p.name] == nil {
				want[p.name] = expectBlocks(t, s, p)
			}
			if err := chromedp.Do(ctx, chromedp.Navigate(base+p.url)); err != nil {
				t.Fatal(err)
			}
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelectorAll("figure.sim.live").length === %d`, len(p.lab.Blocks)),
				chromedp.WithPollingTimeout(30*time.Second))); err != nil {
				t.Fatalf("%s: the widgets did not start: %v", p.url, err)
			}
			small := smallestBlock(s, p)
			shot := false
			for _, b := range p.lab.Blocks {
				if p.lang != "en" && b.ID != small {
					// The translation's blocks run the English ones'
					// scenarios (pages_test.go checks): one run shows the
					// widget works in this language.
					continue
				}
				id := "sim-" + b.ID
				began := time.Now()
				w, err := runWidget(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %v: %s", b.ID, time.Since(began).Round(time.Millisecond), w.Status)
				if !w.Ready {
					t.Fatalf("block %s: the run failed: %s", b.ID, w.Status)
				}
				checkWidget(t, b.ID, w, want[p.name][b.ID])
				if w.Hidden > 1 {
					t.Errorf("block %s: the summary is %d px wider than its place in a 1280 px window: its last columns are cut off", b.ID, w.Hidden)
				}
				if !shot {
					shot = true
					// The sticky header would cover the widget's title.
					chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector(".site-header").style.position = "static"`))
					png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#"+id)))
					if err != nil {
						t.Errorf("screenshot: %v", err)
					} else if err := os.WriteFile(filepath.Join(artifacts, p.lang+"-"+p.name+".png"), png, 0o644); err != nil {
						t.Error(err)
					}
				}
			}
			if msgs := con.take(); len(msgs) > 0 {
				t.Errorf("%s: the console: %q", p.url, msgs)
			}
		})
	}
}

// smallestBlock is the id of the page's block with the fewest calls.
func smallestBlock(s *builtSite, p sitePage) string {
	best, fewest := "", -1.0
	for _, b := range s.outputs[p.name].Blocks {
		n := 0.0
		for _, v := range b.Variants {
			if c, ok := v.Summary["calls"].(float64); ok {
				n += c
			}
		}
		if fewest < 0 || n < fewest {
			best, fewest = b.ID, n
		}
	}
	return best
}

func checkWidget(t *testing.T, block string, w *widgetState, x *expected) {
	t.Helper()
	if x == nil {
		t.Fatalf("block %s: not run by the model", block)
	}
	var names []string
	for _, p := range w.Panes {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, x.variants) {
		t.Fatalf("block %s: variants %v side by side, want %v", block, names, x.variants)
	}
	for _, pane := range w.Panes {
		calls := x.calls[pane.Name]
		if w.Dropped > 0 {
			// The page read too slowly and the server dropped batches (the
			// widget says so); rows can only be fewer.
			if pane.Rows > len(calls) {
				t.Errorf("block %s %s: %d waterfall rows, more than the %d calls sent", block, pane.Name, pane.Rows, len(calls))
			}
			t.Logf("block %s: %d batches dropped under load; rows %d of %d", block, w.Dropped, pane.Rows, len(calls))
			continue
		}
		if pane.Rows != len(calls) {
			t.Errorf("block %s %s: %d waterfall rows, want one per call sent (%d)", block, pane.Name, pane.Rows, len(calls))
		}
		rows := w.Calls[pane.Name]
		if n := min(len(calls), 500); len(rows) != n {
			t.Errorf("block %s %s: the calls table has %d rows, want %d", block, pane.Name, len(rows), n)
			continue
		}
		for i, r := range rows {
			c := calls[i]
			got := fmt.Sprintf("#%d.%d c%d new=%d total=%g", int(r[0]), int(r[1]), int(r[2]), int(r[3]), r[4])
			wantRow := fmt.Sprintf("#%d.%d c%d new=%d total=%g", c.Req, c.Call, c.Conn, c.NumConnects(), float64(c.Total/time.Microsecond)/1000)
			if got != wantRow {
				t.Errorf("block %s %s: call %d is %s, want %s", block, pane.Name, i, got, wantRow)
				break
			}
		}
	}
	shown := 0
	for variant, metrics := range w.Summary {
		for metric, got := range metrics {
			shown++
			v := lookupMetric(x.summary[variant], metric)
			if f, ok := v.(float64); !ok || f != got {
				t.Errorf("block %s: the summary shows %s.%s = %v, sim run has %v", block, variant, metric, got, v)
			}
		}
	}
	if shown < 4*len(w.Panes) && !slices.ContainsFunc(x.variants, func(v string) bool { return x.summary[v]["error"] != nil }) {
		t.Errorf("block %s: the summary shows only %d values", block, shown)
	}
	if len(w.Checks) != len(x.checks) {
		t.Errorf("block %s: %d expectations shown, the block has %d", block, len(w.Checks), len(x.checks))
	}
	for i, c := range w.Checks {
		if i < len(x.checks) && (c == "ok") != x.checks[i].OK {
			t.Errorf("block %s: expectation %q shown as %q", block, x.checks[i].Expect, c)
		}
	}
}

func lookupMetric(m map[string]any, path string) any {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// Without a server (a static host), the widget shows the results computed
// when the site was built until the model in the page has loaded; a host
// that serves the .wasm with another type than application/wasm still
// gets it running (compiled from the bytes).
func TestBrowserNoServer(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	plain := http.FileServer(http.Dir(s.public))
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".wasm") {
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		plain.ServeHTTP(w, r)
	}))
	defer files.Close()
	p := s.page(t, "php-persistent-share", "ko")
	// At the block: sim.ts builds the widgets of the blocks in view first.
	id := "sim-" + p.lab.Blocks[0].ID
	if err := chromedp.Do(ctx, chromedp.Navigate(files.URL+p.url+"#"+id)); err != nil {
		t.Fatal(err)
	}
	x := expectBlocks(t, s, *p)[p.lab.Blocks[0].ID]
	want := lookupMetric(x.summary["persistent"], "total_ms.p50")
	// Once its model has loaded, the page runs a block this small on its
	// own, and a run shows its figures as they stream in: the summary is
	// held to the build-time results while no run has started, and else
	// to the same figures once the page's run is done and drawn.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		w, err := readWidget(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, shown := w.Summary["persistent"]["total_ms.p50"]
		if shown && w.Run != "running" {
			t.Logf("summary read with the widget's run state %q: %v", w.Run, got)
		}
		if shown && w.Run == "" {
			if got != want {
				t.Errorf("build-time summary: persistent total_ms.p50 = %v, want %v", got, want)
			}
			break
		}
		if shown && w.Run == "idle" && got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page's own run: persistent total_ms.p50 = %v after 30 s, want %v (run %q, status %q)", got, want, w.Run, w.Status)
		}
	}
	// The scenario stays readable and the command can be copied.
	cmd, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector("#%s .sim-cmd-text").textContent`, id)))
	if err != nil || !strings.HasPrefix(cmd, "go run ./sim/cmd/sim run --block "+p.lab.Blocks[0].ID+" labs/php-persistent-share.md") {
		t.Errorf("copy command %q (%v)", cmd, err)
	}
	waitModel(t, ctx)
	w, err := runWidget(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !w.Ready {
		t.Fatalf("pressing Run on a static host: %q", w.Status)
	}
	checkWidget(t, p.lab.Blocks[0].ID, w, x)
}

// Another widget of the page asks for a run with connlab:run: the sim
// widget sets its controls, runs with those parameters (no expectations
// then, they describe the block as written) and shows the model's numbers
// for them. A value the server refuses marks its control.
func TestBrowserPageEvents(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	base, _ := serve(t, s)
	var p sitePage
	for _, q := range s.pages {
		if q.name == "php-persistent-share" && q.lang == "en" {
			p = q
		}
	}
	b, err := p.lab.Block("across-requests")
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+p.url)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.dataset.simServer === "live" && document.documentElement.dataset.simWidgets === "all"`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatal(err)
	}
	// What the model gives for rtt = 20ms.
	set, err := lab.ParseSetting("rtt=20ms")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, v := range b.Variants {
		scn, err := b.Scenario(v, []lab.Setting{set})
		if err != nil {
			t.Fatal(err)
		}
		r, err := sim.Run(context.Background(), scn, sim.Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		want[v.Name] = r.Summary.Total.P50
	}
	id := "sim-across-requests"
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("sim-across-requests").scrollIntoView();
document.dispatchEvent(new CustomEvent("connlab:run", {detail: {block: "across-requests", params: {rtt: "20ms"}, mode: "model"}}))`)); err != nil {
		t.Fatal(err)
	}
	var w *widgetState
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if w, err = readWidget(ctx, id); err != nil {
			t.Fatal(err)
		}
		if w.Ready || time.Now().After(deadline) {
			break
		}
	}
	if !w.Ready {
		t.Fatalf("connlab:run did not run the block: %q", w.Status)
	}
	for v, p50 := range want {
		if got := w.Summary[v]["total_ms.p50"]; got != p50 {
			t.Errorf("after connlab:run with rtt=20ms, %s's median call is %v, the model gives %v", v, got, p50)
		}
	}
	if len(w.Checks) != 0 {
		t.Errorf("a run with other parameters shows %d expectations; they describe the block as written", len(w.Checks))
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify([document.getElementById("sim-across-requests-rtt").value, document.querySelector("#sim-across-requests .sim-cmd-text").textContent])`))
	if err != nil {
		t.Fatal(err)
	}
	if got != `["20ms","go run ./sim/cmd/sim run --block across-requests --set rtt=20ms labs/php-persistent-share.md"]` {
		t.Errorf("rtt control and command after connlab:run: %s", got)
	}

	// The server refuses a run of more requests than it streams; the
	// requests control is marked and the status says why.
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#sim-across-requests-requests"), "300000"),
		chromedp.Click(chromedp.CSS("#"+id+" .sim-run"))); err != nil {
		t.Fatal(err)
	}
	res, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const f = document.getElementById("sim-across-requests");
const st = f.querySelector(".sim-status"); if (st.dataset.state !== "error") return false;
return JSON.stringify({status: st.textContent, invalid: f.querySelector("#sim-across-requests-requests").closest(".sim-field").classList.contains("invalid")}); })()`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		t.Fatalf("no error shown for requests = 300000: %v", err)
	}
	var e struct {
		Status  string
		Invalid bool
	}
	json.Unmarshal([]byte(res), &e)
	if !e.Invalid || !strings.Contains(e.Status, "requests") {
		t.Errorf("requests = 300000: control marked %v, status %q; want the control marked and the reason", e.Invalid, e.Status)
	}
}
