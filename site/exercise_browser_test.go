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
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
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
	base, _ := serve(t, s)
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
	// exercise's RTT: the persistent handle's calls take 22 ms there (14 ms
	// with the block's own 12 ms).
	var w *widgetState
	for deadline := time.Now().Add(60 * time.Second); ; {
		if w, err = readWidget(ctx, "sim-across-requests"); err != nil {
			t.Fatal(err)
		}
		if w.Ready && w.Summary["persistent"]["total_ms.p50"] != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reveal did not run the block: %+v", w)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := w.Summary["persistent"]; got["total_ms.p50"] != 22 || got["connects"] != 1 {
		t.Errorf("the run shown: persistent %v, want 1 connection and a 22 ms median", got)
	}
	chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector(".site-header").style.position = "static"`))
	if png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#exercise-warm-call"))); err == nil {
		os.WriteFile(filepath.Join(artifacts, "exercise-en-warm-call.png"), png, 0o644)
	}

	// A choice: wrong, then right.
	if x, err = answer(ctx, "cli-script", "choice:2"); err != nil {
		t.Fatal(err)
	}
	if x.Feedback != "Not quite. Try again." || len(x.Hints) != 1 || x.Done {
		t.Errorf("a wrong choice: %+v", x)
	}
	if x, err = answer(ctx, "cli-script", "choice:1"); err != nil {
		t.Fatal(err)
	}
	if !x.Done || !strings.Contains(x.Reveal, "CLI script") {
		t.Errorf("the right choice: %+v", x)
	}

	// Progress is kept in the browser.
	openLab(t, ctx, page)
	for _, id := range []string{"warm-call", "cli-script"} {
		if x, err := readExercise(ctx, id); err != nil || !x.Done || !x.Shown {
			t.Errorf("after a reload, %s: %+v %v", id, x, err)
		}
	}
	if x, _ := readExercise(ctx, "cold-call"); x.Done {
		t.Error("an exercise never answered shows as done")
	}
	progress, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".ex-progress").textContent`))
	if !strings.Contains(progress, "2 of 3 done") {
		t.Errorf("progress %q", progress)
	}

	// A student's seed: other numbers, and the answer follows them.
	openLab(t, ctx, page+"?seed=3")
	x, _ = readExercise(ctx, "warm-call")
	if !strings.Contains(x.Question, "a round trip of 40ms away") || x.Done {
		t.Fatalf("seed 3: %+v", x)
	}
	if x, err = answer(ctx, "warm-call", "22"); err != nil || x.Done || !strings.Contains(x.Feedback, "Too low") {
		t.Errorf("seed 3, the lab's own answer: %+v %v", x, err)
	}
	if x, err = answer(ctx, "warm-call", "42"); err != nil || !x.Done {
		t.Errorf("seed 3, 42 ms: %+v %v", x, err)
	}

	// The second part's Korean page: an exercise in Korean, the English
	// page's number.
	openLab(t, ctx, base+"/ko/labs/php-persistent-pools/")
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
		// Inputs: a number's value and check, a choice's check, an
		// explanation's check.
		{"", view{Sims: 3, Exercises: 3, Write: 0, Keys: 0, Inputs: 4, Header: true}},
		{"#exercise-worksheet", view{Sims: 0, Exercises: 3, Write: 3, Keys: 0, Inputs: 0}},
		{"#exercise-key", view{Sims: 0, Exercises: 3, Write: 0, Keys: 3, Inputs: 0}},
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

// Class mode in the browser: the student follows the teacher's link with
// the join code, joins with a name on a lab page, sends a prediction, sees
// nothing until the teacher reveals, then sees the answer, their own result
// and the run.
func TestBrowserClass(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	base, out := serve(t, s, "--class", "--class-token", "teacher-token", "--class-seed", "7", "--class-code", "CLASS-1")
	// serve returns at the address's line; the class line is written after it.
	printed := func() bool {
		return strings.Contains(out.String(), "/class/teacher?token=teacher-token") && strings.Contains(out.String(), "/class/?code=CLASS1")
	}
	for deadline := time.Now().Add(5 * time.Second); !printed() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !printed() {
		t.Errorf("sim serve --class does not print the teacher's page and the students' link: %s", out)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/class/?code=class-1")); err != nil {
		t.Fatal(err)
	}
	if state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("code-state").dataset.state`)); state != "ok" {
		t.Fatalf("the students' link: code state %q", state)
	}
	openLab(t, ctx, base+"/labs/php-persistent-share/")
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(".ex-class input[name=name]")),
		chromedp.SetValue(chromedp.CSS(".ex-class input[name=name]"), "  Ann \u202e"),
		chromedp.Click(chromedp.CSS(".ex-class button[type=submit]"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector(".ex-class-status").textContent === "Joined as Ann."`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		status, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".ex-class-status").textContent`))
		t.Fatalf("joining: %q %v", status, err)
	}
	// The class has a seed of its own (7 here): once the page shows the
	// class's numbers, the question gives its round trip, and the answer is
	// that plus 2 ms.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#exercise-warm-call").dataset.seed === "7" && /a round trip of \d+ms away/.test(document.querySelector("#exercise-warm-call .ex-question").textContent)`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatal(err)
	}
	q, _ := readExercise(ctx, "warm-call")
	var rtt float64
	if m := regexp.MustCompile(`a round trip of (\d+)ms away`).FindStringSubmatch(q.Question); m != nil {
		rtt, _ = strconv.ParseFloat(m[1], 64)
	}
	want := rtt + 2
	if _, err := answer(ctx, "warm-call", "300"); err != nil {
		t.Fatal(err)
	}
	// The server acknowledges the prediction.
	chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#exercise-warm-call .ex-feedback").textContent !== ""`,
		chromedp.WithPollingTimeout(20*time.Second)))
	x, _ := readExercise(ctx, "warm-call")
	if !strings.Contains(x.Feedback, "Waiting for the teacher") || x.Done || x.Shown {
		t.Fatalf("a prediction in class: %+v", x)
	}
	// The student's page shows no answer before the reveal, not even the
	// build's key.
	if k, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#exercise-warm-call .ex-keybox, #exercise-warm-call .ex-answer-static")].map(e => e.textContent).join("")`)); strings.Contains(k, " ms") {
		t.Errorf("an answer is on the student's page before the reveal: %q", k)
	}

	teacher, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/class/ws?teacher=teacher-token", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer teacher.Close()
	teacher.WriteJSON(map[string]string{"type": "watch", "lab": "php-persistent-share"})
	for deadline := time.Now().Add(20 * time.Second); ; {
		teacher.SetReadDeadline(deadline)
		var st struct {
			Type      string   `json:"type"`
			Lab       string   `json:"lab"`
			Names     []string `json:"names"`
			Exercises []struct {
				ID        string `json:"id"`
				Histogram struct {
					Count  int   `json:"count"`
					Counts []int `json:"counts"`
				} `json:"histogram"`
			} `json:"exercises"`
		}
		if err := teacher.ReadJSON(&st); err != nil {
			t.Fatalf("the teacher never saw the prediction: %v", err)
		}
		if st.Type == "state" && st.Lab == "php-persistent-share" && len(st.Exercises) > 0 && st.Exercises[0].Histogram.Count == 1 {
			if len(st.Names) != 1 || st.Names[0] != "Ann" {
				t.Errorf("names %q", st.Names)
			}
			break
		}
	}
	teacher.WriteJSON(map[string]string{"type": "reveal", "lab": "php-persistent-share", "exercise": "warm-call"})
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("exercise-warm-call").classList.contains("ex-done")`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the reveal did not reach the page: %v", err)
	}
	x, _ = readExercise(ctx, "warm-call")
	if !strings.Contains(x.Feedback, "Your prediction: 300.") || !strings.Contains(x.Reveal, fmt.Sprintf("%g ms", want)) {
		t.Errorf("after the reveal: %+v", x)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		w, err := readWidget(ctx, "sim-across-requests")
		if err != nil {
			t.Fatal(err)
		}
		if w.Ready && w.Summary["persistent"]["total_ms.p50"] != 0 {
			if got := w.Summary["persistent"]["total_ms.p50"]; got != want {
				t.Errorf("the run shown: persistent total_ms.p50 = %v, want %v", got, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reveal did not run the block: %+v", w)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The teacher's page draws the class.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/class/teacher?token=teacher-token")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.querySelector('section.ex[data-exercise="warm-call"] .answer')`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Errorf("the teacher's page: %v", err)
	}
	if code, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("code").textContent + " " + document.querySelectorAll(".names .student button.remove").length`)); code != "CLASS1 1" {
		t.Errorf("the teacher's page shows code and remove buttons %q, want \"CLASS1 1\"", code)
	}
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		os.MkdirAll(filepath.Join(s.root, "artifacts", "browser"), 0o755)
		os.WriteFile(filepath.Join(s.root, "artifacts", "browser", "class-teacher.png"), png, 0o644)
	}
}
