package site

// Browser tests of the teaching parts of the pages, on the built site
// served by `sim serve`: the explorable figures (the anatomy page's packet
// ladder follows its RTT and TLS controls, with the model's times and a
// packet count that matches the handshake; the port grid follows its
// slider with the model's TIME_WAIT counts), in both languages.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/lab"
)

// figState is what a figure's data attributes say.
type figState map[string]string

func readFig(ctx context.Context, id string) (figState, error) {
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`JSON.stringify(Object.assign({}, (document.getElementById(%q) || {}).dataset || {}))`, id)))
	if err != nil {
		return nil, err
	}
	var f figState
	return f, json.Unmarshal([]byte(raw), &f)
}

// waitFig polls a figure until cond holds (or 60 s pass).
func waitFig(t *testing.T, ctx context.Context, id string, what string, cond func(figState) bool) figState {
	t.Helper()
	var f figState
	var err error
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if f, err = readFig(ctx, id); err != nil {
			t.Fatal(err)
		}
		if cond(f) {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not reached within 60 s: %v", id, what, f)
		}
	}
}

func shoot(t *testing.T, ctx context.Context, s *builtSite, sel, name string) {
	t.Helper()
	dir := filepath.Join(s.root, "artifacts", "browser")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector(".site-header").style.position = "static"`))
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		t.Errorf("screenshot %s: %v", sel, err)
		return
	}
	os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
}

// modelCall runs the anatomy page's call block with overrides and returns
// its one call, as sim run computes it.
func modelCall(t *testing.T, s *builtSite, set ...string) sim.Event {
	t.Helper()
	var p *sitePage
	for i := range s.pages {
		if s.pages[i].name == "anatomy" && s.pages[i].lang == "en" {
			p = &s.pages[i]
		}
	}
	b, err := p.lab.Block("call")
	if err != nil {
		t.Fatal(err)
	}
	var over []lab.Setting
	for _, kv := range set {
		st, err := lab.ParseSetting(kv)
		if err != nil {
			t.Fatal(err)
		}
		over = append(over, st)
	}
	scn, err := b.Scenario(b.Variants[0], over)
	if err != nil {
		t.Fatal(err)
	}
	var call sim.Event
	if _, err := sim.Run(context.Background(), scn, sim.Options{Seed: 1, Sink: func(e *sim.Event) {
		if e.Kind == sim.KindCall {
			call = *e
		}
	}}); err != nil {
		t.Fatal(err)
	}
	return call
}

func msOf(d time.Duration) string {
	return fmt.Sprint(math.Round(float64(d)/float64(time.Microsecond)) / 1000)
}

// The anatomy page's packet ladder, in both languages: drawn from the build
// at first (TLS 1.3: 3 TCP packets, 3 TLS flights), then, each time its
// controls change, from the model's run of the block with them: the total
// time is the model's, and the TLS flights follow the handshake (TLS 1.2
// full: 4; none: 0).
func TestBrowserLadder(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	base, _ := serve(t, s)
	for _, lang := range []string{"en", "ko"} {
		t.Run(lang, func(t *testing.T) {
			if err := chromedp.Do(ctx, chromedp.Navigate(base+pageURL("content", "anatomy", lang))); err != nil {
				t.Fatal(err)
			}
			f := waitFig(t, ctx, "ladder-call", "the first drawing", func(f figState) bool { return f["state"] == "ready" })
			first := modelCall(t, s)
			if f["tls"] != "1.3" || f["tcp"] != "3" || f["tlsFlights"] != "3" || f["total"] != msOf(first.Total) {
				t.Errorf("the build-time ladder: %v; want TLS 1.3, 3 TCP packets, 3 TLS flights, total %s ms", f, msOf(first.Total))
			}
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.dataset.simServer === "live"`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				rtt, tls     string
				tcp, flights string
			}{
				{"100", "1.2", "3", "4"},
				{"20", "none", "3", "0"},
				{"50", "1.3", "3", "3"},
			} {
				js := fmt.Sprintf(`(() => { const r = document.getElementById("ladder-call-rtt"), s = document.getElementById("ladder-call-tls");
r.value = %q; r.dispatchEvent(new Event("input")); s.value = %q; s.dispatchEvent(new Event("change")); })()`, c.rtt, c.tls)
				if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
					t.Fatal(err)
				}
				f := waitFig(t, ctx, "ladder-call", "rtt "+c.rtt+" tls "+c.tls, func(f figState) bool {
					return f["state"] == "ready" && f["rtt"] == c.rtt && f["tls"] == c.tls
				})
				want := modelCall(t, s, "rtt="+c.rtt+"ms", "tls="+c.tls)
				if f["total"] != msOf(want.Total) || f["tcp"] != c.tcp || f["tlsFlights"] != c.flights {
					t.Errorf("rtt %s ms, TLS %s: the ladder shows %v; want total %s ms (the model's), %s TCP packets, %s TLS flights",
						c.rtt, c.tls, f, msOf(want.Total), c.tcp, c.flights)
				}
				if c.tls == "1.2" {
					shoot(t, ctx, s, "#ladder-call", "ladder-"+lang+"-tls12")
				}
			}
		})
	}
}

// The port-exhaustion lab's port grid, in both languages: at each second
// the slider picks, it shows the model's TIME_WAIT count (the block's
// series), failures once the range is full, and, after the run, the
// sockets leaving as their 60 s run out; its own count from the connects
// agrees with the model's during the run.
func TestBrowserPortGrid(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	files := staticServer(t, s.public)
	type sample struct {
		T        float64 `json:"t_s"`
		TimeWait float64 `json:"time_wait"`
		Errors   float64 `json:"errors"`
	}
	var series []sample
	for _, b := range s.raw["port-exhaustion"]["blocks"].([]any) {
		bm := b.(map[string]any)
		if bm["id"] != "exhaust" {
			continue
		}
		for _, v := range bm["variants"].([]any) {
			vm := v.(map[string]any)
			if vm["name"] == "rate-600" {
				raw, _ := json.Marshal(vm["series"])
				json.Unmarshal(raw, &series)
			}
		}
	}
	if len(series) < 100 {
		t.Fatalf("the exhaust block's rate-600 series has %d samples", len(series))
	}
	for _, lang := range []string{"en", "ko"} {
		t.Run(lang, func(t *testing.T) {
			if err := chromedp.Do(ctx, chromedp.Navigate(files.URL+pageURL("labs", "port-exhaustion", lang))); err != nil {
				t.Fatal(err)
			}
			waitFig(t, ctx, "portgrid-exhaust", "the first drawing", func(f figState) bool { return f["state"] == "ready" })
			set := func(sec int) figState {
				js := fmt.Sprintf(`(() => { const r = document.getElementById("portgrid-exhaust-t"); r.value = "%d"; r.dispatchEvent(new Event("input")); })()`, sec)
				if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
					t.Fatal(err)
				}
				return waitFig(t, ctx, "portgrid-exhaust", fmt.Sprintf("second %d", sec), func(f figState) bool { return f["t"] == fmt.Sprint(sec) })
			}
			for _, sec := range []int{10, 30, 47, 48, 90, 120} {
				f := set(sec)
				want := series[sec-1]
				if f["tw"] != fmt.Sprint(want.TimeWait) || f["failed"] != fmt.Sprint(want.Errors) {
					t.Errorf("second %d: the grid shows %s in TIME_WAIT, %s failed; the model %v and %v", sec, f["tw"], f["failed"], want.TimeWait, want.Errors)
				}
				// What the grid draws after the run comes from the connects
				// alone: during the run that count is the model's.
				if d := math.Abs(float64(atoi(f["derived"])) - want.TimeWait); d > 0.01*want.TimeWait {
					t.Errorf("second %d: the grid counts %s sockets opened in the last 60 s, the model has %v in TIME_WAIT", sec, f["derived"], want.TimeWait)
				}
				if sec == 48 {
					shoot(t, ctx, s, "#portgrid-exhaust", "portgrid-"+lang+"-48s")
				}
			}
			// After the run the range drains: fewer at 150 s, none at 180 s.
			f150, f180 := set(150), set(180)
			if !(atoi(f150["tw"]) > 0 && atoi(f150["tw"]) < 28232) || f180["tw"] != "0" {
				t.Errorf("after the run: %s in TIME_WAIT at 150 s, %s at 180 s; want fewer than the range, then none", f150["tw"], f180["tw"])
			}
		})
	}
}

func atoi(s string) int {
	var n int
	fmt.Sscan(strings.TrimSpace(s), &n)
	return n
}

// predictState is what a block asking for a prediction shows.
type predictState struct {
	Predict  string   `json:"predict"`
	Result   string   `json:"result"`
	Visible  []string `json:"visible"`
	Canvases int      `json:"canvases"`
	Box      bool     `json:"box"`
	Text     string   `json:"text"`
	Why      string   `json:"why"`
}

const readPredictJS = `(() => { const f = document.getElementById(%q);
const vis = (e) => getComputedStyle(e).display !== "none" && !!e.offsetParent;
return JSON.stringify({predict: f.dataset.predict || "", result: f.dataset.predictResult || "",
  visible: [...f.children].filter(c => c.tagName !== "FIGCAPTION" && c.tagName !== "NOSCRIPT" && !c.classList.contains("predict") && vis(c)).map(c => c.className || c.tagName),
  canvases: [...f.querySelectorAll("canvas")].filter(vis).length, box: vis(f.querySelector(".predict")),
  text: f.querySelector(".pr-result").textContent, why: (f.querySelector(".pr-why") || {}).textContent || ""}); })()`

func readPredict(t *testing.T, ctx context.Context, id string) predictState {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(readPredictJS, id)))
	if err != nil {
		t.Fatal(err)
	}
	var p predictState
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func waitPredict(t *testing.T, ctx context.Context, id, want string) predictState {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		p := readPredict(t, ctx, id)
		if p.Predict == want {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: data-predict %q, want %q", id, p.Predict, want)
		}
	}
}

// A block that asks for a prediction, on a static host and with sim serve,
// in both languages, for a number and a choice: its charts, numbers and
// scenario are hidden until the reader predicts or skips; then they show,
// the block runs, and the prediction stands beside the model's answer (the
// build's, sim run's) with the explanation. "Predict again" hides them
// again, Skip shows them in one click, and a reload keeps the choice.
func TestBrowserPredict(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	base, _ := serve(t, s)
	files := staticServer(t, s.public)
	answer := func(page, block string) (float64, int) {
		for _, b := range s.raw[page]["blocks"].([]any) {
			bm := b.(map[string]any)
			if bm["id"] == block {
				p, _ := bm["predict"].(map[string]any)
				if p == nil {
					t.Fatalf("%s: block %s has no predict answer in sim run --json", page, block)
				}
				c, _ := p["choice"].(float64)
				return p["value"].(float64), int(c)
			}
		}
		t.Fatalf("%s: no block %s", page, block)
		return 0, 0
	}
	for _, c := range []struct {
		host, dir, page, lang, block, input string
		right                               bool
		shows                               string // the model's answer as the page writes it
	}{
		{base, "labs", "php-persistent-share", "en", "across-requests", "13", true, "14 ms"},
		{files.URL, "labs", "php-persistent-share", "ko", "across-requests", "30", false, "14 ms"},
		{files.URL, "content", "anatomy", "en", "handshakes", "choice:3", false, "3"},
		{base, "content", "anatomy", "ko", "handshakes", "choice:2", true, "3번"},
	} {
		t.Run(c.lang+"/"+c.page, func(t *testing.T) {
			id := "sim-" + c.block
			if err := chromedp.Do(ctx, chromedp.Navigate(c.host+pageURL(c.dir, c.page, c.lang))); err != nil {
				t.Fatal(err)
			}
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`!!document.querySelector("#%s.live")`, id), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
				t.Fatalf("the widget did not start: %v", err)
			}
			p := readPredict(t, ctx, id)
			if p.Predict != "pending" || len(p.Visible) > 0 || p.Canvases > 0 || !p.Box {
				t.Fatalf("before a prediction: %+v; want only the question shown", p)
			}
			value, choice := answer(c.page, c.block)
			if n, ok := strings.CutPrefix(c.input, "choice:"); ok {
				if (atoi(n) == choice) != c.right {
					t.Fatalf("choice %s against the model's %d: the case is wrong", n, choice)
				}
				if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf("#%s .pr-choices input[value=%q]", id, n)))); err != nil {
					t.Fatal(err)
				}
			} else {
				a := &lab.PredictAnswer{Value: value, Tolerance: value * 0.2} // the block's tolerance = "20%"
				if a.Right(float64(atoi(c.input))) != c.right {
					t.Fatalf("%s against the model's %v: the case is wrong", c.input, value)
				}
				if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#"+id+" .pr-value"), c.input)); err != nil {
					t.Fatal(err)
				}
			}
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#"+id+" .pr-go"))); err != nil {
				t.Fatal(err)
			}
			p = waitPredict(t, ctx, id, "done")
			if want := map[bool]string{true: "right", false: "off"}[c.right]; p.Result != want {
				t.Errorf("prediction %s: marked %q, want %q (%s)", c.input, p.Result, want, p.Text)
			}
			if !strings.Contains(p.Text, c.shows) || p.Why == "" {
				t.Errorf("after the prediction: %q, why %q; want the model's %s and an explanation", p.Text, p.Why, c.shows)
			}
			w := waitReady(t, ctx, id)
			p = readPredict(t, ctx, id)
			if p.Canvases == 0 || len(p.Visible) < 3 || len(w.Summary) == 0 {
				t.Errorf("after the prediction the block shows %v, %d charts: want its charts and numbers", p.Visible, p.Canvases)
			}
			// Again, then Skip.
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#"+id+" .pr-again"))); err != nil {
				t.Fatal(err)
			}
			if p = waitPredict(t, ctx, id, "pending"); len(p.Visible) > 0 || p.Canvases > 0 {
				t.Errorf("predict again: %v still shown", p.Visible)
			}
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#"+id+" .pr-skip"))); err != nil {
				t.Fatal(err)
			}
			if p = waitPredict(t, ctx, id, "done"); p.Result != "skipped" || !strings.Contains(p.Text, c.shows) {
				t.Errorf("skip: %+v", p)
			}
			// A reload keeps it shown.
			if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
				t.Fatal(err)
			}
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.getElementById(%q).dataset.predict === "done"`, id), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
				t.Errorf("after a reload the block asks again: %v", err)
			}
		})
	}
}
