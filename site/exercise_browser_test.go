package site

// Browser test of the exercises: on a lab page served by `sim serve`, a
// student answers an exercise wrong (told which way, given a hint), then
// right; the reveal shows the answer and makes the page's sim widget run
// the exercise's scenario; progress survives a reload; a seed gives other
// numbers; the worksheet and the key are the exercises alone. It reuses the
// site build, the browser and the server of build_test.go and
// browser_test.go.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// exerciseState is what the page shows of one exercise.
type exerciseState struct {
	Found    bool     `json:"found"`
	Done     bool     `json:"done"`
	Feedback string   `json:"feedback"`
	Class    string   `json:"class"`
	Hints    []string `json:"hints"`
	Reveal   string   `json:"reveal"`
	Shown    bool     `json:"shown"`
	Question string   `json:"question"`
}

const readExerciseJS = `(() => {
  const s = document.getElementById(%q);
  if (!s) return JSON.stringify({found: false});
  const fb = s.querySelector(".ex-feedback");
  const rv = s.querySelector(".ex-reveal");
  return JSON.stringify({found: true, done: s.classList.contains("ex-done"), feedback: fb.textContent, class: fb.className,
    hints: [...s.querySelectorAll(".ex-hint-list li")].map(li => li.textContent),
    reveal: rv.textContent, shown: !rv.hidden, question: s.querySelector(".ex-question").textContent});
})()`

func readExercise(ctx context.Context, id string) (*exerciseState, error) {
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(readExerciseJS, "exercise-"+id)))
	if err != nil {
		return nil, err
	}
	var x exerciseState
	return &x, json.Unmarshal([]byte(raw), &x)
}

// answer types (or picks) an answer and presses Check.
func answer(ctx context.Context, id, value string) (*exerciseState, error) {
	sel := "#exercise-" + id
	var err error
	if strings.HasPrefix(value, "choice:") {
		err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`%s input[type=radio][value="%s"]`, sel, strings.TrimPrefix(value, "choice:")))))
	} else {
		err = chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(sel+" .ex-value"), value))
	}
	if err != nil {
		return nil, err
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel+" .ex-check"))); err != nil {
		return nil, err
	}
	return readExercise(ctx, id)
}

func openLab(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.dataset.exReady === "1" && document.documentElement.classList.contains("ex-js")`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("%s: the exercises did not start: %v", url, err)
	}
}

func TestBrowserExercises(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	base := serve(t, s)
	artifacts := filepath.Join(s.root, "artifacts", "browser")
	os.MkdirAll(artifacts, 0o755)
	page := base + "/labs/php-persistent-share/"
	openLab(t, ctx, page)

	// warm-call: the 2nd request's call at RTT 20 ms is one round trip and
	// 2 ms of server time, 22 ms ±10 %.
	x, err := answer(ctx, "warm-call", "90")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(x.Feedback, "Too high") || !strings.Contains(x.Class, "bad") || len(x.Hints) != 1 || x.Shown || x.Done {
		t.Fatalf("a wrong answer: %+v", x)
	}
	if !strings.Contains(x.Hints[0], "left its connection open") {
		t.Errorf("first hint %q", x.Hints[0])
	}
	if x, err = answer(ctx, "warm-call", "22 ms"); err != nil {
		t.Fatal(err)
	}
	if x.Feedback != "Right." || !x.Done || !x.Shown || !strings.Contains(x.Reveal, "22 ms") || !strings.Contains(x.Reveal, "one round trip") {
		t.Fatalf("the right answer: %+v", x)
	}
	// The reveal runs the scenario in the page's widget, with the
	// exercise's RTT: the persistent handle's 2nd call takes 22 ms there
	// (14 ms with the block's own 12 ms).
	var w *widgetState
	for deadline := time.Now().Add(60 * time.Second); ; {
		if w, err = readWidget(ctx, "sim-across-requests"); err != nil {
			t.Fatal(err)
		}
		if w.Ready && len(w.Calls["persistent"]) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reveal did not run the block: %+v", w)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if second := w.Calls["persistent"][1]; second[1] != 1 || second[3] != 0 || second[4] != 22 {
		t.Errorf("the run shown: persistent call 2 = %v, want a reused connection and 22 ms", second)
	}
	chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector(".site-header").style.position = "static"`))
	if png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#exercise-warm-call"))); err == nil {
		os.WriteFile(filepath.Join(artifacts, "exercise-en-warm-call.png"), png, 0o644)
	}

	// A choice: wrong, then right.
	if x, err = answer(ctx, "cookie-error", "choice:2"); err != nil {
		t.Fatal(err)
	}
	if x.Feedback != "Not quite. Try again." || len(x.Hints) != 1 || x.Done {
		t.Errorf("a wrong choice: %+v", x)
	}
	if x, err = answer(ctx, "cookie-error", "choice:1"); err != nil {
		t.Fatal(err)
	}
	if !x.Done || !strings.Contains(x.Reveal, "ValueError") {
		t.Errorf("the right choice: %+v", x)
	}

	// Progress is kept in the browser.
	openLab(t, ctx, page)
	for _, id := range []string{"warm-call", "cookie-error"} {
		if x, err := readExercise(ctx, id); err != nil || !x.Done || !x.Shown {
			t.Errorf("after a reload, %s: %+v %v", id, x, err)
		}
	}
	if x, _ := readExercise(ctx, "cold-call"); x.Done {
		t.Error("an exercise never answered shows as done")
	}
	progress, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".ex-progress").textContent`))
	if !strings.Contains(progress, "2 of 6 done") {
		t.Errorf("progress %q", progress)
	}

	// A student's seed: other numbers, and the answer follows them.
	openLab(t, ctx, page+"?seed=5")
	x, _ = readExercise(ctx, "warm-call")
	if !strings.Contains(x.Question, "a round trip of 40ms away") || x.Done {
		t.Fatalf("seed 5: %+v", x)
	}
	if x, err = answer(ctx, "warm-call", "22"); err != nil || x.Done || !strings.Contains(x.Feedback, "Too low") {
		t.Errorf("seed 5, the lab's own answer: %+v %v", x, err)
	}
	if x, err = answer(ctx, "warm-call", "42"); err != nil || !x.Done {
		t.Errorf("seed 5, 42 ms: %+v %v", x, err)
	}

	// The Korean page: the same exercise in Korean, the same number.
	openLab(t, ctx, base+"/ko/labs/php-persistent-share/")
	if x, err = answer(ctx, "worker-connects", "12"); err != nil || !strings.Contains(x.Feedback, "너무 큽니다") {
		t.Errorf("Korean, a wrong answer: %+v %v", x, err)
	}
	if x, err = answer(ctx, "worker-connects", "4"); err != nil || x.Feedback != "정답입니다." || !strings.Contains(x.Reveal, "워커") {
		t.Errorf("Korean, the right answer: %+v %v", x, err)
	}

	// The worksheet and the key: the exercises alone, the key with answers.
	const viewJS = `(() => JSON.stringify({
	  sims: [...document.querySelectorAll("figure.sim")].filter(f => f.offsetParent !== null).length,
	  exercises: [...document.querySelectorAll("section.exercise")].filter(s => s.offsetParent !== null).length,
	  write: [...document.querySelectorAll(".ex-write")].filter(s => s.offsetParent !== null).length,
	  keys: [...document.querySelectorAll(".ex-keybox")].filter(s => s.offsetParent !== null).length,
	  inputs: [...document.querySelectorAll(".ex-value, .ex-check")].filter(s => s.offsetParent !== null).length,
	  header: document.querySelector(".site-header").offsetParent !== null || getComputedStyle(document.querySelector(".site-header")).display !== "none"}))()`
	type view struct {
		Sims, Exercises, Write, Keys, Inputs int
		Header                               bool
	}
	for _, c := range []struct {
		hash string
		want view
	}{
		{"", view{Sims: 5, Exercises: 6, Write: 0, Keys: 0, Inputs: 9, Header: true}},
		{"#exercise-worksheet", view{Sims: 0, Exercises: 6, Write: 6, Keys: 0, Inputs: 0}},
		{"#exercise-key", view{Sims: 0, Exercises: 6, Write: 0, Keys: 6, Inputs: 0}},
	} {
		openLab(t, ctx, base+"/labs/php-persistent-share/"+c.hash)
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](viewJS))
		var got view
		if err != nil || json.Unmarshal([]byte(raw), &got) != nil || got != c.want {
			t.Errorf("view %q: %s (%v); want %+v", c.hash, raw, err, c.want)
		}
		if c.hash != "" {
			if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
				os.WriteFile(filepath.Join(artifacts, "exercise-en-"+strings.TrimPrefix(c.hash, "#")+".png"), png, 0o644)
			}
		}
	}
}
