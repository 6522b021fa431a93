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
	"unicode"

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
	p := s.page(t, "anatomy", "en")
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
			checkMarks(t, "the build-time ladder", f, first)
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.dataset.simServer === "live" && document.documentElement.dataset.simWidgets === "all"`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
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
				checkMarks(t, "rtt "+c.rtt+" ms, TLS "+c.tls, f, want)
				if c.tls == "1.2" {
					shoot(t, ctx, s, "#ladder-call", "ladder-"+lang+"-tls12")
				}
			}
		})
	}
}

// checkMarks: the ladder marks the end of every phase of sim's table that
// the call has (a curl time above zero), in order, with curl's name.
func checkMarks(t *testing.T, what string, f figState, call sim.Event) {
	t.Helper()
	var want []string
	for _, p := range sim.CurlPhases() {
		if p.Time(&call) > 0 {
			want = append(want, p.Curl)
		}
	}
	if got := f["marks"]; got != strings.Join(want, " ") {
		t.Errorf("%s: the ladder marks %q; want %q", what, got, strings.Join(want, " "))
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
		{base, "labs", "php-persistent-pools", "en", "workers", "4", true, "4 connections"},
		{files.URL, "labs", "php-persistent-pools", "ko", "workers", "12", false, "4 개"},
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

// englishOnPageJS lists the Latin-script words a page shows outside code:
// the text of every visible element (and its title and aria-label) but
// code, commands (pre, kbd, the widgets' command lines and scenario keys),
// scripts and what is hidden.
const englishOnPageJS = `(() => {
  const skip = "CODE,PRE,KBD,SCRIPT,STYLE,NOSCRIPT,SAMP,svg";
  // Commands, scenario keys, and program output quoted as it is (an
  // expectation's value, a refused variant's error).
  const codeish = ".sim-cmd,.sim-chips,.sim-toml,.ex-cmd,[translate=no],.lang-switch,.got,.sim-refused,.sim-summary td.bad";
  const out = [];
  const phrases = %s;
  const words = (s, where) => {
    let t = (s || "").replace(/\s+/g, " ");
    for (const p of phrases) t = t.split(p).join(" ");
    // A word, not a unit after a number (30s, 2ms) nor a flag (-c).
    for (const m of t.matchAll(/(?<![0-9A-Za-z_\-.\/])[µA-Za-z][A-Za-z0-9_.'’()\/+-]*/g)) out.push([m[0], where, s.trim().slice(0, 120)]);
  };
  const shown = (e) => e.checkVisibility ? e.checkVisibility() : !!e.offsetParent;
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  // A <wbr> (a long identifier's break, sim/summary.ts) splits a word into
  // text nodes: such an element's words are read from its whole text.
  const whole = new Set();
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest(skip) || p.closest(codeish) || !shown(p)) continue;
    const where = p.tagName.toLowerCase() + (p.className && typeof p.className === "string" ? "." + p.className.split(" ")[0] : "");
    if (p.querySelector(":scope > wbr")) {
      if (!whole.has(p)) words(p.textContent, where);
      whole.add(p);
      continue;
    }
    words(n.textContent, where);
  }
  for (const e of document.body.querySelectorAll("[title],[aria-label],[placeholder]")) {
    if (e.closest(skip) || e.closest(codeish) || !shown(e)) continue;
    for (const a of ["title", "aria-label", "placeholder"]) if (e.getAttribute(a)) words(e.getAttribute(a), e.tagName.toLowerCase() + "@" + a);
  }
  return JSON.stringify(out);
})()`

// allowedLatin says whether a Latin-script word may stand on a Korean page
// (where: the element, and @attribute for an attribute's text):
// a proper name or a term the glossary keeps in English, an identifier
// (with _ . ( ) / or a digit: curl_share_init(), p50, HTTP/1.1), a unit.
func allowedLatin(g *glossary) func(word, where string) bool {
	ok := map[string]bool{}
	for _, w := range g.Proper.Words {
		ok[strings.ToLower(w)] = true
	}
	for _, term := range g.Term {
		if term.Keep {
			for _, w := range strings.Fields(term.Ko) {
				ok[strings.ToLower(w)] = true
			}
		}
	}
	// Scenario keys and their values are what a control's tooltip and
	// label name (code in the scenario's TOML).
	scenario := map[string]bool{}
	for _, p := range sim.Params() {
		scenario[p.Key] = true
		for _, v := range p.Enum {
			scenario[v] = true
		}
	}
	return func(w, where string) bool {
		w = strings.TrimRight(w, ".'’-")
		if strings.Contains(where, "@") && scenario[w] {
			return true
		}
		lw := strings.ToLower(w)
		switch {
		case ok[lw] || ok[strings.TrimSuffix(lw, "s")] || ok[w]:
			return true
		case strings.ContainsAny(w, "_()/0123456789"), strings.Contains(w, ".") && !strings.HasSuffix(w, "."):
			return true // an identifier or a version: curl_share_init(), p50, HTTP/1.1
		case len(w) >= 2 && strings.ToUpper(w) == w:
			return true // an acronym or a constant: CONNECT, ECDH, ID
		case len([]rune(w)) == 1 && w != "a" && w != "I":
			return true // a variable: N, M
		case strings.IndexFunc(w[1:], unicode.IsUpper) >= 0:
			return true // a name in camel case: ConnectionPool, IdleConnTimeout
		}
		return false
	}
}

// Every Korean page shows no English words outside code, commands and the
// glossary's names (site/data/glossary.toml, [proper]): its prose, its
// blocks' titles, notes, labels and the widgets' UI, with every prediction
// answered so the blocks show everything.
func TestBrowserKoreanText(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	files := staticServer(t, s.public)
	g := readGlossary(t)
	ok := allowedLatin(g)
	pj, _ := json.Marshal(g.Proper.Phrases)
	phrases := string(pj)
	all := pages(t)
	checked := 0
	for _, name := range sortedNames(all) {
		if all[name]["ko"] == nil {
			continue
		}
		dir := "content"
		if strings.HasPrefix(all[name]["ko"].path, "../labs/") {
			dir = "labs"
		}
		t.Run(name, func(t *testing.T) {
			if err := chromedp.Do(ctx, chromedp.Navigate(files.URL+pageURL(dir, name, "ko")), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
				t.Fatal(err)
			}
			n := len(all[name]["ko"].lab.Blocks)
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelectorAll("figure.sim.live").length === %d && [...document.querySelectorAll("figure.fig")].every(f => f.dataset.state === "ready")`, n),
				chromedp.WithPollingTimeout(30*time.Second))); err != nil {
				t.Fatalf("the widgets did not start: %v", err)
			}
			chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('figure.sim[data-predict=pending] .pr-skip').forEach(b => b.click()); document.querySelectorAll("details").forEach(d => d.open = true)`))
			raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(englishOnPageJS, phrases)))
			if err != nil {
				t.Fatal(err)
			}
			var found [][3]string
			if err := json.Unmarshal([]byte(raw), &found); err != nil {
				t.Fatal(err)
			}
			checked += len(found)
			seen := map[string]bool{}
			for _, f := range found {
				if ok(f[0], f[1]) || seen[f[0]+f[1]] {
					continue
				}
				seen[f[0]+f[1]] = true
				t.Errorf("%q in %s: %q", f[0], f[1], f[2])
			}
		})
	}
	if checked == 0 {
		t.Error("no Latin-script word on any Korean page: the test reads nothing")
	}
}

// TestAllowedLatin: the detector lets through names, identifiers and
// scenario values in a control's tooltip, not English words.
func TestAllowedLatin(t *testing.T) {
	ok := allowedLatin(readGlossary(t))
	for _, c := range []struct {
		word, where string
		want        bool
	}{
		{"nginx", "p", true}, {"TIME_WAIT", "p", true}, {"curl_share_init()", "h4", true}, {"p50", "td", true},
		{"ConnectionPool", "span", true}, {"ECDH", "td", true}, {"keep-alive", "p", true}, {"HTTP/1.1", "span", true},
		{"request", "label@title", true}, {"none", "div@title", true},
		{"request", "p", false}, {"the", "p", false}, {"base", "h4", false}, {"worker", "th", false},
		{"Run", "button", false}, {"a", "p", false}, {"connections", "span", false},
	} {
		if got := ok(c.word, c.where); got != c.want {
			t.Errorf("allowed(%q in %s) = %v, want %v", c.word, c.where, got, c.want)
		}
	}
}

// The exercises' teaching parts, on a static host, in both languages: the
// page's rubric matcher agrees with Go's on every case of
// sim/lab/testdata/rubric.json; an explanation is checked against its key
// points (which it names, marked, as Instance.Check finds them); hints
// come one rung at a time, the button saying which; a worked example
// waits, folded, before its question.
func TestBrowserExerciseTeach(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	files := staticServer(t, s.public)
	raw, err := os.ReadFile("../sim/lab/testdata/rubric.json")
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]string{
		"en": "nginx closes a connection after its keepalive_timeout; after 60 s it is still open, so it is reused.",
		"ko": "nginx는 keepalive_timeout이 지나면 연결을 닫습니다. 60초 뒤에는 아직 열려 있어서 다시 씁니다.",
	}
	for _, lang := range []string{"en", "ko"} {
		t.Run(lang, func(t *testing.T) {
			openLab(t, ctx, files.URL+pageURL("labs", "php-persistent-pools", lang))
			// The twin of Go's matcher.
			got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(`+string(raw)+`.map(c => window.connlabRubric.mentions(window.connlabRubric.normalizeAnswer(c.answer), c.phrase) === c.want))`))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(got, "false") {
				t.Errorf("the page's rubric matcher disagrees with Go's on cases %s (true: agrees)", got)
			}
			// An explanation naming two of the three key points.
			_, xs, err := lab.ReadExercises(filepath.Join(s.root, "labs", map[string]string{"en": "php-persistent-pools.md", "ko": "php-persistent-pools.ko.md"}[lang]))
			if err != nil {
				t.Fatal(err)
			}
			var x *lab.Exercise
			for _, e := range xs {
				if e.ID == "idle-pause" {
					x = e
				}
			}
			in := &lab.Instance{Kind: "explain", Rubric: x.Rubric, Pass: x.Pass}
			v, err := in.Check(answers[lang])
			if err != nil || !v.OK {
				t.Fatalf("Go's verdict on the test's answer: %+v %v", v, err)
			}
			if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#exercise-idle-pause .ex-text"), answers[lang]),
				chromedp.Click(chromedp.CSS("#exercise-idle-pause .ex-check"))); err != nil {
				t.Fatal(err)
			}
			marks, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const li = [...document.querySelectorAll("#exercise-idle-pause .ex-reveal .ex-points li")];
return li.length ? JSON.stringify({marks: li.map(l => l.dataset.found === "1"), feedback: document.querySelector("#exercise-idle-pause .ex-feedback").className}) : false; })()`, chromedp.WithPollingTimeout(10*time.Second)))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(struct {
				Marks    []bool `json:"marks"`
				Feedback string `json:"feedback"`
			}{v.Points, "ex-feedback ex-live ok"})
			if marks != string(want) {
				t.Errorf("the page marks %s; Go's Instance.Check: %s", marks, want)
			}
			// Start again; an answer naming nothing is told so.
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#exercise-idle-pause .ex-again")),
				chromedp.SetValue(chromedp.CSS("#exercise-idle-pause .ex-text"), "?"),
				chromedp.Click(chromedp.CSS("#exercise-idle-pause .ex-check"))); err != nil {
				t.Fatal(err)
			}
			bad, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#exercise-idle-pause .ex-feedback").className + " " + document.querySelectorAll("#exercise-idle-pause .ex-reveal .ex-points li.missing").length`))
			if bad != "ex-feedback ex-live bad 3" {
				t.Errorf("an explanation naming no key point: %q", bad)
			}
			// The hint ladder of cookie-error (two hints).
			ladder, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const b = document.querySelector("#exercise-cookie-error .ex-hint"); const out = [b.textContent];
b.click(); out.push(b.textContent, document.querySelectorAll("#exercise-cookie-error .ex-hint-list li").length);
b.click(); out.push(b.textContent, document.querySelectorAll("#exercise-cookie-error .ex-hint-list li").length, b.disabled); return JSON.stringify(out); })()`))
			if err != nil {
				t.Fatal(err)
			}
			wantLadder := map[string]string{"en": `["Hint 1 of 2","Hint 2 of 2",1,"Hint 2 of 2",2,true]`, "ko": `["힌트 1/2","힌트 2/2",1,"힌트 2/2",2,true]`}[lang]
			if ladder != wantLadder {
				t.Errorf("the hint ladder: %s, want %s", ladder, wantLadder)
			}
		})
	}
	// The worked example, folded before its question.
	for _, lang := range []string{"en", "ko"} {
		doc := s.html(t, pageURL("labs", "port-exhaustion", lang))
		found := false
		for _, sec := range hFind(doc, "section", "exercise") {
			if hAttr(sec, "data-exercise") == "first-error" && len(hFind(sec, "details", "ex-worked")) == 1 {
				found = true
			}
		}
		if !found {
			t.Errorf("%s port-exhaustion: the first-error exercise shows no worked example", lang)
		}
	}
}

// Every lab and content page but the home page, built, in both languages,
// opens with its intro: how long it takes (the front matter's minutes),
// what the reader will learn and what to know first, with links to pages
// that exist, in the page's language.
func TestPageIntroBuilt(t *testing.T) {
	s := site(t)
	all := pages(t)
	heads := map[string][2]string{"en": {"What you will learn", "Before you start"}, "ko": {"이 페이지에서 배울 것", "시작하기 전에"}}
	for _, name := range introPages(all) {
		for _, lang := range []string{"en", "ko"} {
			p := all[name][lang]
			if p == nil {
				continue
			}
			dir := "content"
			if strings.HasPrefix(p.path, "../labs/") {
				dir = "labs"
			}
			url := pageURL(dir, name, lang)
			doc := s.html(t, url)
			intro := hFind(doc, "section", "page-intro")
			if len(intro) != 1 {
				t.Errorf("%s: %d intros, want 1", url, len(intro))
				continue
			}
			in, _ := readIntro(p)
			times := hFind(intro[0], "p", "intro-time")
			if len(times) != 1 || hAttr(times[0], "data-minutes") != fmt.Sprint(in.minutes) || !strings.Contains(hText(times[0]), fmt.Sprint(in.minutes)) {
				t.Errorf("%s: the time shown is not the front matter's %d minutes", url, in.minutes)
			}
			var hs []string
			for _, h := range hFind(intro[0], "h2", "intro-h") {
				hs = append(hs, hText(h))
			}
			if len(hs) < 2 || hs[0] != heads[lang][0] || hs[1] != heads[lang][1] {
				t.Errorf("%s: intro headings %q, want %q", url, hs, heads[lang])
			}
			if n := len(hFind(hFind(intro[0], "div", "intro-learn")[0], "li", "")); n != len(in.objectives) {
				t.Errorf("%s: %d objectives shown, the front matter has %d", url, n, len(in.objectives))
			}
			for _, a := range hFind(intro[0], "a", "") {
				href := hAttr(a, "href")
				if lang == "ko" && !strings.HasPrefix(href, "/ko/") {
					t.Errorf("%s: prerequisite link %s leaves the Korean site", url, href)
				}
				if _, err := os.Stat(filepath.Join(s.public, href, "index.html")); err != nil {
					t.Errorf("%s: prerequisite link %s: %v", url, href, err)
				}
			}
		}
	}
}
