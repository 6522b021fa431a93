package site

// The built site on a static host: public/ served by Go's http.FileServer
// (what any static host does: no /ws, no /api, no /exercise/api). The model
// runs in the page (sim/cmd/simwasm in a Web Worker), and every lab page,
// in both languages, is held to what `sim run` prints: a slider moved and
// Run pressed gives sim run --json's summaries for the command the page
// shows; the link the page copies restores the controls and runs the same
// numbers; exercises with ?seed= get `sim exercise --seed`'s numbers and
// check answers; Run real and class mode say they need the local server;
// and nothing is logged as an error in the console.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/connlab/connlab/internal/wasmpack"
	"github.com/connlab/connlab/sim/cli"
	"golang.org/x/net/html"
)

// staticServer serves dir as a plain static host does.
func staticServer(t testing.TB, dir string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv
}

// console collects what a tab logs as an error: console.error, uncaught
// exceptions, and the browser's own (a failed request, a refused socket).
type console struct {
	mu   sync.Mutex
	msgs []string
}

func watchConsole(t testing.TB, ctx context.Context) *console {
	t.Helper()
	c := &console{}
	// Tests read the model's replies as they came (model/client.ts).
	if _, err := chromedp.Call(ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: `window.connlabTrace = []`}); err != nil {
		t.Fatal(err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				c.mu.Lock()
				c.msgs = append(c.msgs, m.String()+" "+m.URL)
				c.mu.Unlock()
			}
		}
	}()
	return c
}

func (c *console) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.msgs
	c.msgs = nil
	return m
}

// waitWidgets waits until every block's widget is built: sim.ts builds
// those out of view after the first run of the blocks in view.
func waitWidgets(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.dataset.simWidgets === "all"`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the widgets were not all built: %v", err)
	}
}

// waitModel waits until the page's model is ready (or says why not), and
// every block's widget is built (sim.ts builds those out of view later).
func waitModel(t *testing.T, ctx context.Context) {
	t.Helper()
	var st string
	for deadline := time.Now().Add(time.Minute); ; {
		var err error
		st, err = chromedp.Run(ctx, chromedp.Poll[string](`(() => { const s = document.documentElement.dataset.simModel;
return (s === "ready" || s === "failed") && document.documentElement.dataset.simWidgets === "all" ? s + " " + (window.connlabModel?.error || "") : false; })()`, chromedp.WithPollingTimeout(time.Minute)))
		if err == nil {
			break
		}
		// Right after a navigation the poll can meet the page between two
		// documents; ask the new one.
		if time.Now().After(deadline) || !strings.Contains(err.Error(), "context with specified id") {
			t.Fatalf("the model did not load: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.HasPrefix(st, "ready") {
		t.Fatalf("the model did not start: %s", st)
	}
}

// trace returns the model's replies the page received since the last call
// (events aside), as raw JSON.
func trace(t *testing.T, ctx context.Context) []json.RawMessage {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify((window.connlabTrace || []).splice(0))`))
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		t.Fatal(err)
	}
	out := make([]json.RawMessage, len(list))
	for i, s := range list {
		out[i] = json.RawMessage(s)
	}
	return out
}

// doneSummaries reads the last done message of a trace: each variant's
// summary as the page got it (bytes) and its error.
func doneSummaries(t *testing.T, msgs []json.RawMessage) map[string]string {
	t.Helper()
	for i := len(msgs) - 1; i >= 0; i-- {
		var d struct {
			Type     string
			Message  string
			Variants []struct {
				Name    string
				Summary json.RawMessage
				Error   string
			}
		}
		json.Unmarshal(msgs[i], &d)
		if d.Type == "error" {
			t.Fatalf("the model answered an error: %s", msgs[i])
		}
		if d.Type != "done" {
			continue
		}
		out := map[string]string{}
		for _, v := range d.Variants {
			out[v.Name] = string(v.Summary) + " " + v.Error
		}
		return out
	}
	t.Fatalf("no done message among %d replies", len(msgs))
	return nil
}

var cmdRE = regexp.MustCompile(`^go run \./sim/cmd/sim (run .*)$`)

// commandSummaries runs the command a widget shows (its "Copy as sim run
// command"), with --json, and returns each variant's summary as sim run
// prints it (compacted: the same bytes json.Marshal gives) and its error.
func commandSummaries(t *testing.T, s *builtSite, command string) map[string]string {
	t.Helper()
	m := cmdRE.FindStringSubmatch(command)
	if m == nil {
		t.Fatalf("the page's command %q is not a sim run command", command)
	}
	args := shellSplit(t, m[1])
	file := args[len(args)-1]
	args = append(append([]string{"run", "--json"}, args[1:len(args)-1]...), filepath.Join(s.root, file))
	out, err := simCLIAny(args...)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Blocks []struct {
			Variants []struct {
				Name    string
				Summary json.RawMessage
				Error   string
			}
		}
	}
	if err := json.Unmarshal(out, &v); err != nil || len(v.Blocks) != 1 {
		t.Fatalf("%s: %v (%d blocks)", command, err, len(v.Blocks))
	}
	res := map[string]string{}
	for _, vr := range v.Blocks[0].Variants {
		var b bytes.Buffer
		if len(vr.Summary) > 0 {
			json.Compact(&b, vr.Summary)
		} else {
			b.WriteString("null")
		}
		res[vr.Name] = b.String() + " " + vr.Error
	}
	return res
}

// simCLIAny is simCLI that also takes exit status 1 (an expectation not
// met, which sim run reports after its output).
func simCLIAny(args ...string) ([]byte, error) {
	out, err := simCLI(args...)
	if err != nil && strings.Contains(err.Error(), "exit 1:") {
		return out, nil
	}
	return out, err
}

// shellSplit reads the page's command line: words, 'single-quoted' parts.
func shellSplit(t *testing.T, s string) []string {
	var out []string
	var cur strings.Builder
	in, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, in = true, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		case c == ' ':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quoted {
		t.Fatalf("unclosed quote in %q", s)
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

func sameSummaries(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: variants %v, sim run has %v", what, slices.Sorted(mapKeys(got)), slices.Sorted(mapKeys(want)))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: variant %s: the page's model gave\n%s\nsim run prints\n%s", what, k, got[k], w)
		}
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// staticBlock is the block a page's static test moves a slider on: the
// smallest with a slider.
func staticBlock(t *testing.T, ctx context.Context, s *builtSite, p sitePage) string {
	t.Helper()
	best, fewest := "", -1.0
	for _, b := range s.outputs[p.name].Blocks {
		has, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`!!document.querySelector("#sim-%s .sim-slider")`, b.ID)))
		if err != nil || !has {
			continue
		}
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
	if best == "" {
		t.Fatalf("%s: no block with a slider", p.url)
	}
	return best
}

// moveSlider moves a block's first slider one stop (up, or down at the
// top) as a reader's drag does, and returns the key and its new value.
func moveSlider(t *testing.T, ctx context.Context, id string) (string, string) {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(() => {
  const sl = document.querySelector("#%s .sim-slider");
  const v = +sl.value;
  sl.value = String(v + 1 <= +sl.max ? v + 1 : v - 1);
  sl.dispatchEvent(new Event("input", {bubbles: true}));
  const f = sl.closest(".sim-field");
  return JSON.stringify([f.querySelector("label code").textContent, f.querySelector(".sim-text").value]);
})()`, id)))
	if err != nil {
		t.Fatal(err)
	}
	var kv [2]string
	json.Unmarshal([]byte(raw), &kv)
	return kv[0], kv[1]
}

func widgetText(t *testing.T, ctx context.Context, id, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector("#%s %s")?.textContent ?? ""`, id, sel)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitReady waits until a run someone asked for is on screen.
func waitReady(t *testing.T, ctx context.Context, id string) *widgetState {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		w, err := readWidget(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if w.Ready || w.State == "error" || w.State == "noserver" {
			if !w.Ready {
				t.Fatalf("%s: %s", id, w.Status)
			}
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no result within 2 minutes (status %q)", id, w.Status)
		}
	}
}

func TestStaticSite(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	con := watchConsole(t, ctx)
	files := staticServer(t, s.public)
	tiered, predicting := 0, 0
	for _, p := range s.pages {
		t.Run(p.lang+"/"+p.name, func(t *testing.T) {
			con.take()
			if err := chromedp.Do(ctx, chromedp.Navigate(files.URL+p.url)); err != nil {
				t.Fatal(err)
			}
			waitModel(t, ctx)
			if st, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.dataset.simServer`)); st != "none" {
				t.Errorf("data-sim-server = %q on a static host, want none", st)
			}
			block := staticBlock(t, ctx, s, p)
			id := "sim-" + block
			trace(t, ctx)
			// Run real is no dead button here: it says what it needs.
			note := widgetText(t, ctx, id, ".sim-real-note:not([hidden])")
			if hidden, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector("#%s .sim-run-real").hidden`, id))); !hidden || !strings.Contains(note, "make serve") {
				t.Errorf("Run real on a static host: button hidden %v, note %q; want the note naming make serve", hidden, note)
			}

			// A slider moved, Run: sim run's numbers for the page's command.
			key, value := moveSlider(t, ctx, id)
			w, err := runWidget(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !w.Ready {
				t.Fatalf("block %s: %s", block, w.Status)
			}
			got := doneSummaries(t, trace(t, ctx))
			command := widgetText(t, ctx, id, ".sim-cmd-text")
			if !strings.Contains(command, "--set "+key+"="+value+" ") && !strings.Contains(command, "--set '"+key+"="+value+"' ") {
				t.Errorf("after moving %s to %s the command is %q", key, value, command)
			}
			want := commandSummaries(t, s, command)
			sameSummaries(t, p.url+" "+command, got, want)
			for variant, metrics := range w.Summary {
				for metric, shown := range metrics {
					var sum map[string]any
					js, _, _ := strings.Cut(want[variant], " ")
					json.Unmarshal([]byte(js), &sum)
					if v, ok := lookupMetric(sum, metric).(float64); !ok || v != shown {
						t.Errorf("block %s: the summary shows %s.%s = %v, sim run has %v", block, variant, metric, shown, lookupMetric(sum, metric))
					}
				}
			}

			// The copied link restores the state and runs it (with an
			// exercise seed, on pages with exercises).
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#"+id+" .sim-copy-link"))); err != nil {
				t.Fatal(err)
			}
			link, err := chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(`document.getElementById(%q).dataset.link || false`, id), chromedp.WithPollingTimeout(5*time.Second)))
			if err != nil {
				t.Fatal(err)
			}
			addr, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
			if u, _ := url.Parse(addr); u == nil || !strings.Contains(u.RawQuery, block+"."+key+"=") {
				t.Errorf("after the run the address is %s, want the block's state in it", addr)
			}
			// sim run takes the same link.
			st, err := cli.ParseLink(link, "", s.root)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"run", "--json", "--block", st.Block, "--seed", strconv.FormatUint(st.Seed, 10)}
			for _, kv := range st.Set {
				args = append(args, "--set", "'"+kv+"'")
			}
			byLink := "go run ./sim/cmd/sim run " + strings.Join(append(args[2:], st.File), " ")
			sameSummaries(t, "sim run "+link, commandSummaries(t, s, byLink), want)
			exercises := len(hFind(s.html(t, p.url), "section", "exercise")) > 0
			if exercises {
				u, _ := url.Parse(link)
				q := u.Query()
				q.Set("seed", "7")
				u.RawQuery = q.Encode()
				link = u.String()
			}
			// A new page (the address bar holds the same query already).
			if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(link)); err != nil {
				t.Fatal(err)
			}
			waitReady(t, ctx, id)
			sameSummaries(t, "the copied link "+link, doneSummaries(t, trace(t, ctx)), want)
			restored, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.getElementById(%q).value`, id+"-"+key)))
			if restored != value || widgetText(t, ctx, id, ".sim-cmd-text") != command {
				t.Errorf("the link restored %s = %q and the command %q; want %q and %q", key, restored, widgetText(t, ctx, id, ".sim-cmd-text"), value, command)
			}
			if exercises {
				checkStaticExercises(t, ctx, s, p)
			}
			// Whole-stack blocks ([[tier]] tables) run in the page's model
			// too, a tier's slider moved; blocks that ask a prediction
			// first run once it is skipped.
			tiers, predicts := specialBlocks(t, s, p)
			for _, b := range tiers {
				checkStaticBlock(t, ctx, s, "sim-"+b, "tier.")
				tiered++
			}
			for _, b := range predicts {
				if b != block && !slices.Contains(tiers, b) {
					checkStaticBlock(t, ctx, s, "sim-"+b, "")
				}
				predicting++
			}
			for _, m := range con.take() {
				t.Errorf("console: %s", m)
			}
		})
	}
	if tiered == 0 || predicting == 0 {
		t.Errorf("%d blocks with [[tier]] tables and %d that ask a prediction first were run: the labs have both kinds", tiered, predicting)
	}
}

// specialBlocks are a page's blocks with [[tier]] tables and those that
// ask a prediction first, from the lab as data that make data wrote (sim
// lab --json).
func specialBlocks(t *testing.T, s *builtSite, p sitePage) (tiers, predicts []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(s.data, "labs", p.lang, p.name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Blocks []struct {
			ID      string
			Tiers   []string
			Predict json.RawMessage
		}
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatal(err)
	}
	for _, b := range l.Blocks {
		if len(b.Tiers) > 0 {
			tiers = append(tiers, b.ID)
		}
		if len(b.Predict) > 0 && string(b.Predict) != "null" {
			predicts = append(predicts, b.ID)
		}
	}
	return tiers, predicts
}

// checkStaticBlock moves a block's first slider whose key starts with
// prefix one stop and presses Run (skipping a prediction): the page's model
// gives the numbers sim run gives for the widget's command, and Run real
// says it needs make serve.
func checkStaticBlock(t *testing.T, ctx context.Context, s *builtSite, id, prefix string) {
	t.Helper()
	waitWidgets(t, ctx)
	trace(t, ctx)
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(() => {
  const f = [...document.querySelectorAll("#%s .sim-field")].find((f) => f.querySelector(".sim-slider") && f.querySelector("label code")?.textContent.startsWith(%q));
  if (!f) return "";
  const sl = f.querySelector(".sim-slider");
  sl.value = String(+sl.value + 1 <= +sl.max ? +sl.value + 1 : +sl.value - 1);
  sl.dispatchEvent(new Event("input", {bubbles: true}));
  return JSON.stringify([f.querySelector("label code").textContent, f.querySelector(".sim-text").value]);
})()`, id, prefix)))
	if err != nil || raw == "" {
		t.Fatalf("%s: no slider for a key %s… (%v)", id, prefix, err)
	}
	var kv [2]string
	json.Unmarshal([]byte(raw), &kv)
	w, err := runWidget(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !w.Ready {
		t.Fatalf("%s with %s = %s: %s", id, kv[0], kv[1], w.Status)
	}
	got := doneSummaries(t, trace(t, ctx))
	command := widgetText(t, ctx, id, ".sim-cmd-text")
	if !strings.Contains(command, "--set "+kv[0]+"="+kv[1]+" ") && !strings.Contains(command, "--set '"+kv[0]+"="+kv[1]+"' ") {
		t.Errorf("after moving %s to %s the command is %q", kv[0], kv[1], command)
	}
	sameSummaries(t, id+" "+command, got, commandSummaries(t, s, command))
	note := widgetText(t, ctx, id, ".sim-real-note:not([hidden])")
	if hidden, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector("#%s .sim-run-real").hidden`, id))); !hidden || !strings.Contains(note, "make serve") {
		t.Errorf("%s: Run real on a static host: button hidden %v, note %q; want the note naming make serve", id, hidden, note)
	}
}

// checkStaticExercises: with ?seed=7 the page shows `sim exercise --seed 7`'s
// numbers, computed by the model in the page; a wrong prediction is told
// so, the right one is taken; class mode says it needs the local server.
func checkStaticExercises(t *testing.T, ctx context.Context, s *builtSite, p sitePage) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.dataset.exReady === "1"`, chromedp.WithPollingTimeout(time.Minute))); err != nil {
		t.Fatal(err)
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.connlabExercises.exercises.map(x => x.inst))`))
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	json.Unmarshal([]byte(raw), &got)
	key, err := simCLI("exercise", "--key", "--json", "--seed", "7", "--lang", p.lang, filepath.Join(s.root, strings.Replace(p.file, ".ko.md", ".md", 1)))
	if err != nil {
		t.Fatal(err)
	}
	var want struct{ Exercises []map[string]any }
	json.Unmarshal(key, &want)
	if len(got) != len(want.Exercises) || len(got) == 0 {
		t.Fatalf("%d exercises on the page, sim exercise has %d", len(got), len(want.Exercises))
	}
	number := -1
	for i, w := range want.Exercises {
		if fmt.Sprint(got[i]["seed"]) != "7" || fmt.Sprint(got[i]["answer"]) != fmt.Sprint(w["answer"]) || fmt.Sprint(got[i]["question"]) != fmt.Sprint(w["question"]) {
			t.Errorf("exercise %v with seed 7: the page has seed %v, %q, answer %v; sim exercise has %q, answer %v", w["id"], got[i]["seed"], got[i]["question"], got[i]["answer"], w["question"], w["answer"])
		}
		if number < 0 && w["kind"] == "number" {
			number = i
		}
	}
	if number >= 0 {
		x := want.Exercises[number]
		sel := fmt.Sprintf("#exercise-%s", x["id"])
		answer := x["answer"].(float64)
		for _, c := range []struct {
			value float64
			want  string
		}{{answer*3 + 1000, "bad"}, {answer, "ok"}} {
			res, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(() => { const s = document.querySelector(%q);
s.querySelector(".ex-value").value = %q; s.querySelector(".ex-check").click();
return s.querySelector(".ex-feedback").className; })()`, sel, fmt.Sprint(c.value))))
			if err != nil || !strings.Contains(res, c.want) {
				t.Errorf("exercise %v: predicting %v gives feedback %q (%v), want %s", x["id"], c.value, res, err, c.want)
			}
		}
	}
	note := ""
	chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`1`))
	note, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".ex-class-static:not([hidden])")?.textContent ?? ""`))
	if !strings.Contains(note, "sim serve --class") {
		t.Errorf("class mode on a static host: note %q, want one naming sim serve --class", note)
	}
}

// Every file a page refers to is in public/ and a plain static server
// serves it with a type browsers take: the .wasm as application/wasm, the
// host probe saying "no server". The .wasm's compressed size is logged
// (make bench reports it).
// TestStaticProbeOnce: a lab page asks the host's probe (api/server.json)
// once: the model's worker, started by the page's head, asks it and tells
// the page, which then does not ask too (model/client.ts host). With the
// worker gone before it answered, the page asks itself.
func TestStaticProbeOnce(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	con := watchConsole(t, ctx)
	var mu sync.Mutex
	probes := 0
	noWorker := false
	fs := http.FileServer(http.Dir(s.public))
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if strings.HasSuffix(r.URL.Path, "/api/server.json") {
			probes++
		}
		missing := noWorker && strings.Contains(r.URL.Path, "/model-worker.")
		mu.Unlock()
		if missing {
			http.NotFound(w, r)
			return
		}
		fs.ServeHTTP(w, r)
	}))
	t.Cleanup(files.Close)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := probes
		probes = 0
		return n
	}
	for _, c := range []struct {
		name    string
		missing bool
	}{
		{"worker", false},
		// The head's worker fails before it answers (its script missing):
		// the page asks the probe itself, and the widgets still learn
		// there is no server.
		{"worker missing", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			noWorker = c.missing
			mu.Unlock()
			count()
			con.take()
			if err := chromedp.Do(ctx, chromedp.Navigate(files.URL+"/labs/php-persistent-share/")); err != nil {
				t.Fatal(err)
			}
			st, err := chromedp.Run(ctx, chromedp.Poll[string](`document.documentElement.dataset.simServer || false`, chromedp.WithPollingTimeout(time.Minute)))
			if err != nil {
				t.Fatal(err)
			}
			if st != "none" {
				t.Errorf("data-sim-server = %q on a static host, want none", st)
			}
			if !c.missing {
				waitModel(t, ctx)
			}
			time.Sleep(200 * time.Millisecond) // a second probe, if any, would be on its way
			if n := count(); n != 1 {
				t.Errorf("the page and its worker asked the probe %d times, want once", n)
			}
			if !c.missing {
				if msgs := con.take(); len(msgs) > 0 {
					t.Errorf("console: %v", msgs)
				}
			}
		})
	}
}

// TestModelStartsBeforeStylesheets: on a page with a widget, the script
// that starts the model's worker comes before the stylesheets. After one,
// it waits until the stylesheet has loaded (head.html).
func TestModelStartsBeforeStylesheets(t *testing.T) {
	s := site(t)
	checked := 0
	for _, p := range s.pages {
		if p.lab == nil {
			continue
		}
		doc := s.html(t, p.url)
		boot, sheet := -1, -1
		for i, n := range hFind(doc, "", "") {
			switch {
			case n.Data == "script" && boot < 0 && strings.Contains(hText(n), "connlabBoot"):
				boot = i
			case n.Data == "link" && sheet < 0 && hAttr(n, "rel") == "stylesheet":
				sheet = i
			}
		}
		if boot < 0 || sheet < 0 {
			t.Errorf("%s: the worker's start script at %d, the first stylesheet at %d: want both", p.url, boot, sheet)
			continue
		}
		if boot > sheet {
			t.Errorf("%s: the worker's start script comes after a stylesheet", p.url)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no lab page checked")
	}
}

func TestStaticPublish(t *testing.T) {
	s := site(t)
	files := staticServer(t, s.public)
	seen := map[string]bool{}
	var wasm string
	for _, p := range s.pages {
		doc := s.html(t, p.url)
		var refs []string
		for _, n := range hFind(doc, "", "") {
			for _, a := range []string{"src", "href"} {
				if v := hAttr(n, a); strings.HasPrefix(v, "/") {
					refs = append(refs, v)
				}
			}
		}
		cfg := hFind(doc, "script", "")
		for _, n := range cfg {
			if hAttr(n, "id") == "connlab-model" {
				var c map[string]any
				if err := json.Unmarshal([]byte(hText(n)), &c); err != nil {
					t.Fatalf("%s: connlab-model: %v", p.url, err)
				}
				for _, k := range []string{"worker", "wasm", "probe"} {
					v, _ := c[k].(string)
					if v == "" {
						t.Fatalf("%s: no %s in the model's config %v", p.url, k, c)
					}
					refs = append(refs, v)
				}
				wasm = c["wasm"].(string)
			}
			if hHasClass(n, "sim-data") || hHasClass(n, "ex-data") {
				var d struct{ Data string }
				json.Unmarshal([]byte(hText(n)), &d)
				if d.Data == "" {
					t.Errorf("%s: a widget without its lab's data URL", p.url)
				}
				refs = append(refs, d.Data)
			}
		}
		for _, r := range refs {
			u, _ := url.Parse(r)
			if seen[u.Path] {
				continue
			}
			seen[u.Path] = true
			resp, err := http.Get(files.URL + u.Path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("%s refers to %s: %s", p.url, u.Path, resp.Status)
			}
			ct := resp.Header.Get("Content-Type")
			switch {
			case strings.HasSuffix(u.Path, ".wasm") && ct != "application/wasm":
				t.Errorf("%s served as %q", u.Path, ct)
			case strings.HasSuffix(u.Path, ".js") && !strings.Contains(ct, "javascript"):
				t.Errorf("%s served as %q", u.Path, ct)
			case strings.HasSuffix(u.Path, "server.json") && !bytes.Contains(body, []byte(`"server":false`)):
				t.Errorf("%s says %s on a static host", u.Path, body)
			}
		}
	}
	if wasm == "" {
		t.Fatal("no page carries the model")
	}
	b, err := os.ReadFile(filepath.Join(s.public, filepath.FromSlash(wasm)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes, %d gzipped", wasm, len(b), gzipSize(b))
	// make wasm packs the linker's data segments (internal/wasmpack): Go
	// writes tens of thousands of them.
	if _, n, err := wasmpack.Image(b); err != nil || n > 1000 {
		t.Errorf("the .wasm's data: %d segments (%v); make wasm did not pack them", n, err)
	}
	if !regexp.MustCompile(`\.[0-9a-f]{64}\.wasm$`).MatchString(wasm) {
		t.Errorf("the .wasm %s is not fingerprinted", wasm)
	}
}

func gzipSize(b []byte) int {
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return z.Len()
}

var _ = html.ElementNode

// A chart is drawn once its widget comes near the view, or before the page
// is printed (sim/canvas.ts Width): a lab page opened at its top draws the
// charts of the blocks the reader sees, not those further down; scrolling
// to a block draws its charts, and so does a beforeprint event for every
// block left.
// TestWidgetsInViewFirst: opened at a block, the page builds that block's
// widget at once and the widgets of the blocks out of view only after the
// first model result; then every one (sim.ts marks each widget built).
func TestWidgetsInViewFirst(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	files := staticServer(t, s.public)
	p := s.page(t, "php-persistent-share", "en")
	if len(p.lab.Blocks) < 2 {
		t.Fatalf("%s has %d blocks; the test needs one out of view", p.url, len(p.lab.Blocks))
	}
	first := p.lab.Blocks[0].ID
	if err := chromedp.Do(ctx, chromedp.Navigate(files.URL+p.url+"#sim-"+first)); err != nil {
		t.Fatal(err)
	}
	waitModel(t, ctx)
	raw, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => {
  const m = {}; for (const e of performance.getEntriesByType("mark")) m[e.name] = e.startTime;
  return m["connlab:first-result"] ? JSON.stringify(m) : false; })()`, chromedp.WithPollingTimeout(time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	var marks map[string]float64
	if err := json.Unmarshal([]byte(raw), &marks); err != nil {
		t.Fatal(err)
	}
	result := marks["connlab:first-result"]
	for i, b := range p.lab.Blocks {
		at, ok := marks["connlab:built:"+b.ID]
		switch {
		case !ok:
			t.Errorf("block %s: no widget", b.ID)
		case i == 0 && at >= result:
			t.Errorf("block %s, in view: built at %.0f ms, after the first result (%.0f ms)", b.ID, at, result)
		case i > 0 && at < result:
			t.Errorf("block %s, out of view: built at %.0f ms, before the first result (%.0f ms)", b.ID, at, result)
		}
	}
}

func TestChartsDrawnInView(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	files := staticServer(t, s.public)
	p := s.page(t, "php-persistent-share", "en")
	// Each block: where it is on the page, and whether each of its shown
	// canvases was drawn (setup in canvas.ts sets data-size).
	type block struct {
		ID    string  `json:"id"`
		Top   float64 `json:"top"`
		View  float64 `json:"view"`
		Drawn []bool  `json:"drawn"`
	}
	const readJS = `JSON.stringify([...document.querySelectorAll("figure.sim")].map((f) => ({id: f.id,
  top: f.getBoundingClientRect().top, view: innerHeight,
  drawn: [...f.querySelectorAll("canvas")].filter((c) => c.offsetParent).map((c) => !!c.dataset.size)})))`
	read := func(js string) []block {
		t.Helper()
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatal(err)
		}
		var bs []block
		if err := json.Unmarshal([]byte(raw), &bs); err != nil {
			t.Fatal(err)
		}
		return bs
	}
	all := func(d []bool) bool { return len(d) > 0 && !slices.Contains(d, false) }
	// open loads the page at its top and returns the blocks well below the
	// view (further than the observer's margin) that show canvases; none
	// of those may have drawn one.
	open := func() []block {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(files.URL+p.url)); err != nil {
			t.Fatal(err)
		}
		waitModel(t, ctx)
		var far []block
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			bs := read(readJS)
			near := true
			far = far[:0]
			for _, b := range bs {
				switch {
				case b.Top < b.View && len(b.Drawn) > 0 && !all(b.Drawn):
					near = false // in view, not drawn yet
				case b.Top > b.View+600 && len(b.Drawn) > 0:
					far = append(far, b)
				}
			}
			if near {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a block in view has not drawn its charts: %+v", bs)
			}
		}
		if len(far) == 0 {
			t.Fatalf("no block with charts far below the view on %s", p.url)
		}
		for _, b := range far {
			if slices.Contains(b.Drawn, true) {
				t.Errorf("%s, %.0f px below the top of a %.0f px view, drew a chart before it came into view: %v", b.ID, b.Top, b.View, b.Drawn)
			}
		}
		return far
	}

	far := open()
	last := far[len(far)-1]
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.getElementById(%q).scrollIntoView(), true`, last.ID))); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var b *block
		for _, x := range read(readJS) {
			if x.ID == last.ID {
				b = &x
			}
		}
		if b != nil && all(b.Drawn) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s scrolled into view but its charts were not drawn: %+v", last.ID, b)
		}
	}

	// Printing draws every chart, at once (the event's listeners run before
	// the page is laid out for print).
	far = open()
	for _, b := range read(`window.dispatchEvent(new Event("beforeprint")), ` + readJS) {
		for _, f := range far {
			if f.ID == b.ID && !all(b.Drawn) {
				t.Errorf("%s: not every chart drawn for printing: %v", b.ID, b.Drawn)
			}
		}
	}
}
