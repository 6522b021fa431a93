package site

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/phpwasm"
)

// TestBrowserRealPHP presses "Run real" on the PHP lab's option-sets block
// (its second part, php-persistent-pools, which runs the first's scripts)
// through sim serve: the block runs on PHP 8.5 in WebAssembly, and the page
// shows that it did (its version, libcurl and OpenSSL), the exceptions PHP
// threw beside the model's words for the variants the model rejects, what
// identity.php printed, and the connection counts PHP measured.
func TestBrowserRealPHP(t *testing.T) {
	if testing.Short() {
		t.Skip("a real run")
	}
	root, err := phpwasm.Root("..")
	if err == nil {
		_, _, err = phpwasm.Find(root)
	}
	if err != nil {
		t.Skipf("PHP 8.5 cannot run here: %v", err)
	}
	s := site(t)
	var page *sitePage
	for i, p := range s.pages {
		if p.name == "php-persistent-pools" && p.lang == "en" {
			page = &s.pages[i]
		}
	}
	if page == nil {
		t.Fatal("no English page of the PHP lab's second part")
	}
	ctx := browser(t)
	base, _ := serve(t, s)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+page.url)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.querySelector("#sim-option-sets.live") && !document.querySelector("#sim-option-sets .sim-run-real").hidden`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the widget has no Run real button: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("#sim-option-sets[data-predict=pending] .pr-skip")?.click(); document.getElementById("sim-option-sets").scrollIntoView()`),
		chromedp.Click(chromedp.CSS("#sim-option-sets .sim-run-real"))); err != nil {
		t.Fatal(err)
	}
	var w *widgetState
	for deadline := time.Now().Add(5 * time.Minute); ; {
		if w, err = readWidget(ctx, "sim-option-sets"); err != nil {
			t.Fatal(err)
		}
		if w.Ready || w.State == "error" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result of the real run within 5 minutes: %q", w.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !w.Ready {
		t.Fatalf("the real run failed: %s", w.Status)
	}
	// A real run's cells hold the model's value and the error beside the
	// measurement: the table still fits its place.
	if w.Hidden > 1 {
		t.Errorf("the summary of the real run is %d px wider than its place in a 1280 px window: its last columns are cut off", w.Hidden)
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
  const f = document.getElementById("sim-option-sets");
  const cols = [...f.querySelectorAll(".sim-summary thead th")].slice(1).map(th => th.textContent);
  const row = (sel) => { const tr = f.querySelector(".sim-summary tr" + sel); return tr ? [...tr.querySelectorAll("td")].map(td => td.textContent) : null; };
  const refused = [...f.querySelectorAll(".sim-summary tr.refused td")].map(td => ({real: td.querySelector(".real-error")?.textContent || td.textContent, model: td.querySelector(".model-error")?.textContent || ""}));
  const checks = {};
  for (const tr of f.querySelectorAll(".sim-summary tr.check")) checks[tr.querySelector("th").textContent] = [...tr.querySelectorAll("td")].map(td => td.textContent);
  return JSON.stringify({cols, runtime: row(".runtime"), refused, checks});
})()`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Cols    []string `json:"cols"`
		Runtime []string `json:"runtime"`
		Refused []struct{ Real, Model string }
		Checks  map[string][]string `json:"checks"`
	}
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	t.Logf("page shows: %s", raw)
	b, _ := page.lab.Block("option-sets")
	if len(got.Runtime) != len(b.Variants) || len(got.Refused) != len(b.Variants) {
		t.Fatalf("runtime row %q, refused row %v: want one cell per variant (%d)", got.Runtime, got.Refused, len(b.Variants))
	}
	for i, v := range b.Variants {
		if !strings.HasPrefix(got.Runtime[i], "PHP 8.5.") || !strings.Contains(got.Runtime[i], "libcurl") || !strings.Contains(got.Runtime[i], "OpenSSL") {
			t.Errorf("%s ran on %q, want PHP 8.5.x with its libcurl and OpenSSL named", v.Name, got.Runtime[i])
		}
		s, err := b.Scenario(v, nil)
		if err != nil {
			t.Fatal(err)
		}
		verr := s.Validate()
		if verr == nil {
			continue
		}
		// The model's words, and PHP's own, which are the same.
		var pe *sim.ParamError
		want := verr.Error()
		if pe, _ = verr.(*sim.ParamError); pe != nil {
			want = pe.Msg
		}
		if c := got.Refused[i]; c.Real != want || !strings.Contains(c.Model, want) {
			t.Errorf("%s: the page shows PHP's %q and the model's %q; want both %q", v.Name, c.Real, c.Model, want)
		}
	}
	idx := map[string]int{}
	for i, v := range b.Variants {
		idx[v.Name] = i
	}
	for id, want := range map[string]string{"identical": "false", "class": "CurlSharePersistentHandle", "setopt": "TypeError: curl_share_setopt()"} {
		cells := got.Checks["check."+id]
		if len(cells) <= idx["identity"] || !strings.HasPrefix(cells[idx["identity"]], want) {
			t.Errorf("check.%s: the page shows %q, want %q for identity", id, cells, want)
		}
	}
	if got := fmt.Sprint(w.Summary["reordered"]["connects"], w.Summary["dns-only"]["connects"]); got != "1 2" {
		t.Errorf("measured connects of reordered and dns-only: %s, want 1 2", got)
	}
}
