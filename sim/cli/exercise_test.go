package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

const portLab = "../../labs/port-exhaustion.md"

func runSimIn(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb}, args)
	return out.String(), errb.String(), code
}

// TestExerciseInteractive drives `sim exercise` through stdin: a wrong
// answer gets told which way it is off and a hint, a right one is accepted,
// a wrong choice gets a hint, and the explanation follows each answer.
func TestExerciseInteractive(t *testing.T) {
	// warm-call: 22 ms ±10 %; cold-call: skipped; cli-script: choice 1.
	out, errs, code := runSimIn(t, "10\n\n?\n90\n22\nskip\n1\n", "exercise", phpLab)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"[1/3] The second request (warm-call, number)",
		"The API is a round trip of 20ms away",
		"✗ Not quite: your answer is too low.",
		"hint: The 1st request left its connection open",
		"Type an answer, ? for a hint",
		"hint: No DNS, no TCP, no TLS",
		"✗ Not quite: your answer is too high.",
		"(no more hints: type show for the answer)",
		"✓ Right: 22 ms ±10%.",
		"Why: The 2nd request finds the TLS connection",
		"See the run: sim run --block across-requests --set rtt=20ms ../../labs/php-persistent-share.md",
		"[2/3]", "skipped",
		"✓ Right: 1) Nothing",
		"2 of 2 right (1 on the first try).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	// The second part: worker-connects: 4; cookie-error: a wrong choice,
	// then 1; idle-pause: words that name none of its rubric's key points.
	out, errs, code = runSimIn(t, "4\n3\n1\nmy own words\n", "exercise", phpPoolsLab)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"[1/3] One pool per worker (worker-connects, number)",
		"✓ Right: 4.",
		"  1) The `ValueError` passes the `catch`",
		"✗ Not quite.\n  hint: What does PHP throw",
		"✓ Right: 1) The `ValueError` passes the `catch`",
		"Key points: your explanation names 0 of 3 (2 needed).",
		"    ✗ The server closes a connection left idle",
		"A model answer: The API server (nginx) closes",
		"2 of 2 right (1 on the first try).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	// show gives the answer away; the end of input stops cleanly.
	out, _, code = runSimIn(t, "show\n", "exercise", "--id", "warm-call", phpLab)
	if code != 0 || !strings.Contains(out, "The answer: 22 ms ±10%") {
		t.Errorf("show: exit %d\n%s", code, out)
	}
	out, _, code = runSimIn(t, "", "exercise", phpLab)
	if code != 0 || !strings.Contains(out, "(stopped: no more input)") || !strings.Contains(out, "0 of 1 right") {
		t.Errorf("EOF: exit %d\n%s", code, out)
	}
}

// TestExerciseSeed: a seed changes the numbers in the question and the
// answer with them; the same seed gives the same exercise.
func TestExerciseSeed(t *testing.T) {
	key := func(seed string) map[string]any {
		out, errs, code := runSim(t, "exercise", "--key", "--json", "--seed", seed, "--id", "warm-call", phpLab)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		raw := map[string]any{}
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatal(err)
		}
		return raw["exercises"].([]any)[0].(map[string]any)
	}
	if a := key("0")["answer"]; a != 22.0 {
		t.Errorf("seed 0: %v", a)
	}
	seen := map[float64]bool{}
	for s := 1; s <= 12; s++ {
		seed := fmt.Sprint(s)
		e := key(seed)
		a := e["answer"].(float64)
		seen[a] = true
		rtt := e["values"].(map[string]any)["rtt"].(string)
		if !strings.Contains(e["question"].(string), "a round trip of "+rtt+" away") {
			t.Errorf("seed %s: question does not show rtt %s", seed, rtt)
		}
		// A warm call: one round trip and the server's 2 ms.
		var ms float64
		fmt.Sscanf(rtt, "%fms", &ms)
		if a != ms+2 {
			t.Errorf("seed %s: rtt %s, answer %v", seed, rtt, a)
		}
		if again := key(seed); again["answer"] != e["answer"] {
			t.Errorf("seed %s gives %v then %v", seed, e["answer"], again["answer"])
		}
	}
	if len(seen) < 3 {
		t.Errorf("12 seeds gave answers %v", seen)
	}
}

// TestExerciseKeyJSON checks the key's contract and that every numeric
// answer is the model's: for an exercise on a block's own scenario, the
// same number `sim run --json` prints for that block.
func TestExerciseKeyJSON(t *testing.T) {
	out, errs, code := runSim(t, "exercise", "--key", "--json", phpLab)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Exercises []map[string]any `json:"exercises"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Exercises) != 3 {
		t.Fatalf("%d exercises", len(doc.Exercises))
	}
	for _, e := range doc.Exercises {
		for _, k := range []string{"id", "question", "answer", "tolerance", "scenario"} {
			if _, ok := e[k]; !ok {
				t.Errorf("exercise %v lacks %q", e["id"], k)
			}
		}
	}
	warm := doc.Exercises[0]
	sc := warm["scenario"].(map[string]any)
	if warm["id"] != "warm-call" || sc["block"] != "across-requests" || sc["variant"] != "persistent" || sc["metric"] != "total_ms" ||
		sc["call"] != 2.0 || sc["set"].(map[string]any)["rtt"] != "20ms" {
		t.Fatalf("first exercise %v", warm)
	}
	if warm["answer"] != 22.0 || warm["tolerance"] != 2.2 {
		t.Errorf("warm-call: %v ± %v, want 22 ± 10%%", warm["answer"], warm["tolerance"])
	}
	// The second part's worker-connects is asked on its block's own
	// scenario: its answer is what sim run prints for that block.
	out, errs, code = runSim(t, "exercise", "--key", "--json", phpPoolsLab)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	workers := doc.Exercises[0]
	run, _, code := runSim(t, "run", "--json", "--block", "workers", phpPoolsLab)
	if code != 0 {
		t.Fatal("sim run failed")
	}
	var res LabOutput
	if err := json.Unmarshal([]byte(run), &res); err != nil {
		t.Fatal(err)
	}
	if want := res.Blocks[0].Variants[1].Summary.Connects; workers["id"] != "worker-connects" || res.Blocks[0].Variants[1].Name != "persistent" || workers["answer"].(float64) != float64(want) {
		t.Errorf("key says %v, sim run says %v", workers["answer"], want)
	}
	// The text key names the scenario and the command that reproduces it.
	txt, _, _ := runSim(t, "exercise", "--key", phpLab)
	for _, w := range []string{"answer: 22 ms ±10% (19.8 … 24.2)", "set rtt=20ms, metric total_ms of call 2",
		"run: sim run --block across-requests --set rtt=20ms ../../labs/php-persistent-share.md", "← right"} {
		if !strings.Contains(txt, w) {
			t.Errorf("key lacks %q\n%s", w, txt)
		}
	}
	if txt, _, _ := runSim(t, "exercise", "--key", phpPoolsLab); !strings.Contains(txt, "answer: 4\n") {
		t.Errorf("the second part's key lacks %q\n%s", "answer: 4", txt)
	}
}

func TestExerciseAnswersFrom(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	all := write("all.toml", "warm-call = [10, \"22 ms\"]\ncold-call = \"the name is looked up again, then the TCP and TLS handshakes\"\ncli-script = \"1\"\n")
	out, errs, code := runSim(t, "exercise", "--answers-from", all, phpLab)
	if code != 0 || !strings.Contains(out, "2 of 2 right (1 on the first try).") || !strings.Contains(out, "your answer (ms)> 10\n✗") {
		t.Errorf("exit %d %s\n%s", code, errs, out)
	}
	some := write("some.toml", "warm-call = 22\ncli-script = 2\n")
	out, _, code = runSim(t, "exercise", "--answers-from", some, phpLab)
	if code != 1 || !strings.Contains(out, "1 of 2 right") || !strings.Contains(out, "The answer: 1) Nothing") {
		t.Errorf("exit %d\n%s", code, out)
	}
	pools := write("pools.toml", "worker-connects = 4\ncookie-error = 1\nidle-pause = \"the server closed it after its keepalive_timeout\"\n")
	out, errs, code = runSim(t, "exercise", "--answers-from", pools, phpPoolsLab)
	if code != 0 || !strings.Contains(out, "2 of 2 right (2 on the first try).") {
		t.Errorf("the second part: exit %d %s\n%s", code, errs, out)
	}
	for _, c := range []struct {
		file, want string
	}{
		{write("unknown.toml", "\nwarm-cal = 22\n"), "unknown.toml:2: no exercise \"warm-cal\""},
		{write("bad.toml", "warm-call = \n"), "bad.toml:1"},
		{write("table.toml", "warm-call = { a = 1 }\n"), "want a number or a string"},
	} {
		_, errs, code := runSim(t, "exercise", "--answers-from", c.file, phpLab)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, %q; want %q", c.file, code, errs, c.want)
		}
	}
}

func TestExerciseBadUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.md")
	os.WriteFile(bad, []byte("```sim {id=\"b\"}\nrequests = 1\n```\n\n```exercise {id=\"e\"}\nkind = \"number\"\nquestion = \"q\"\nblock = \"b\"\nmetric = \"connectz\"\ntolerance = 1\n```\n"), 0o644)
	none := filepath.Join(dir, "none.md")
	os.WriteFile(none, []byte("```sim {id=\"b\"}\nrequests = 1\n```\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"exercise", bad}, "bad.md:9: exercise \"e\": metric \"connectz\""},
		{[]string{"exercise", none}, "no ```exercise blocks"},
		{[]string{"exercise", "--lang", "ko", none}, "has no Korean translation"},
		{[]string{"exercise", "--lang", "fr", portLab}, "want en or ko"},
		{[]string{"exercise", "--json", portLab}, "--json goes with --key"},
		{[]string{"exercise", "--id", "nope", portLab}, `no exercise "nope" (exercises: first-error, loopback-reuse, lasting-fix)`},
		{[]string{"exercise", "--seed", "9007199254740992", portLab}, "--seed: at most"},
		{[]string{"exercise"}, "want exactly one FILE"},
	} {
		_, errs, code := runSim(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("sim %v: exit %d, %q; want %q", c.args, code, errs, c.want)
		}
	}
}

// TestExerciseInterrupted: Ctrl-C at the quiz's prompt stops it at once,
// though the student has typed nothing.
func TestExerciseInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe() // a keyboard nobody types on
	defer pw.Close()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, &Env{Stdin: pr, Stdout: &out, Stderr: &errb}, []string{"exercise", portLab})
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case code := <-done:
		if code != 130 || !strings.Contains(errb.String(), "sim exercise: interrupted") {
			t.Errorf("exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the quiz still waits for input after Ctrl-C")
	}
}

// Every message of the terminal has its words in both languages: a field
// added to uiText without a row in textsIn's table, or a row whose key
// sim/i18n lacks, would print nothing (or only its indent).
func TestTextsInBothLanguages(t *testing.T) {
	for _, lang := range []string{"en", "ko"} {
		v := reflect.ValueOf(textsIn(lang))
		for i := 0; i < v.NumField(); i++ {
			if strings.TrimSpace(v.Field(i).String()) == "" {
				t.Errorf("%s: uiText.%s has no text", lang, v.Type().Field(i).Name)
			}
		}
	}
	if en, ko := textsIn("en"), textsIn("ko"); en.intro == ko.intro || en.keyTitle == ko.keyTitle {
		t.Error("the Korean texts are the English ones")
	}
}

// fmtVerb is one of fmt's verbs, possibly with an argument index (%[2]d).
var fmtVerb = regexp.MustCompile(`%(?:\[\d+\])?[a-z%]`)

// A translation formats the same arguments as the English message: Korean
// may reorder them (%[2]d), but a verb too many or too few, or of another
// type, would print %!d(MISSING) or %!d(string=…).
func TestTextsFormatTheSameArguments(t *testing.T) {
	en, ko := reflect.ValueOf(textsIn("en")), reflect.ValueOf(textsIn("ko"))
	for i := 0; i < en.NumField(); i++ {
		e, k := en.Field(i).String(), ko.Field(i).String()
		var args []any
		for _, v := range fmtVerb.FindAllString(e, -1) {
			switch v[len(v)-1] {
			case 'd':
				args = append(args, len(args)+1)
			case '%':
			default:
				args = append(args, fmt.Sprintf("arg%d", len(args)+1))
			}
		}
		for lang, s := range map[string]string{"en": e, "ko": k} {
			if out := fmt.Sprintf(s, args...); strings.Contains(out, "%!") {
				t.Errorf("%s: uiText.%s %q with the English message's arguments: %q", lang, en.Type().Field(i).Name, s, out)
			}
		}
	}
}
