package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// testAnswers shares answers between tests that compute the same ones.
var testAnswers = NewAnswerCache(10000)

var (
	resultsMu sync.Mutex
	results   = map[string]map[string]*BlockResult{}
)

// labResults runs a lab once for every test and translation (a translation's
// blocks run the English ones' scenarios: site tests check).
func labResults(t *testing.T, l *Lab) map[string]*BlockResult {
	t.Helper()
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(l.File), ".md"), ".ko")
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if r, ok := results[name]; ok {
		return r
	}
	res, err := l.Run(context.Background(), nil, RunOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*BlockResult{}
	for _, r := range res {
		byID[r.ID] = r
	}
	results[name] = byID
	return byID
}

// allLabFiles lists the labs in every language.
func allLabFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../labs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no labs: %v", err)
	}
	return files
}

// labFiles lists the English labs.
func labFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../labs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no labs: %v", err)
	}
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".ko.md") {
			out = append(out, f)
		}
	}
	return out
}

// TestLabExercises: every lab has 3 to 6 exercises with one explain
// question; every number's answer is computed by the model, for the lab's
// own scenario and for every value a seed can pick; every expectation about
// an answer holds against the lab's results, in every language.
func TestLabExercises(t *testing.T) {
	for _, f := range allLabFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			l, xs, err := ReadExercises(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(xs) < 3 || len(xs) > 6 {
				t.Errorf("%d exercises; want 3 to 6", len(xs))
			}
			kinds := map[ExerciseKind]int{}
			for _, x := range xs {
				kinds[x.Kind]++
			}
			if kinds["explain"] != 1 || kinds["number"] == 0 || kinds["choice"] == 0 {
				t.Errorf("kinds %v: want numbers, choices and one explain question", kinds)
			}
			byID := labResults(t, l)
			ctx := context.Background()
			english := !strings.HasSuffix(f, ".ko.md")
			for _, x := range xs {
				in, err := x.InstanceCached(ctx, 0, testAnswers)
				if err != nil {
					t.Fatalf("%s: %v", x.ID, err)
				}
				if x.Kind != "explain" && len(x.Expects) == 0 {
					t.Errorf("%s:%d: exercise %s states no expectation about its answer", f, x.FenceLine, x.ID)
				}
				for _, c := range x.CheckExpects(in, byID) {
					if !c.OK {
						t.Errorf("%s:%d: exercise %s: %s: got %s", f, c.Line, x.ID, c.Expect, c.Got)
					}
				}
				if x.Kind == "choice" && english && len(x.Vary) > 0 {
					// Vary must change the answer: across the values a seed
					// may pick, at least two choices are right.
					if !x.Computed() {
						t.Errorf("%s:%d: exercise %s varies its inputs but not its answer: compute the right choice (correct_when)", f, x.FenceLine, x.ID)
					}
					right := map[int]bool{}
					for _, over := range varyOverrides(x) {
						c, err := x.CorrectChoice(ctx, over)
						if err != nil {
							t.Errorf("exercise %s: %v", x.ID, err)
							continue
						}
						right[c] = true
					}
					if len(right) < 2 {
						t.Errorf("exercise %s: the same choice is right for every value of vary (%v)", x.ID, right)
					}
				}
				if x.Kind != "number" || !english {
					continue // a translation's numbers: TestTranslationsAgree
				}
				if len(x.Hints) == 0 || x.Explain == "" {
					t.Errorf("exercise %s: a number needs hints and an explanation", x.ID)
				}
				// The lab's own scenario: the answer is the block's result.
				if len(x.Set) == 0 && x.Call == 0 {
					m := Metrics{x.Block: {}}
					for _, v := range byID[x.Block].Variants {
						m[x.Block][v.Name] = MetricsOf(v)
					}
					want, err := evalNode(x.metric, m)
					if err != nil || want != in.Answer {
						t.Errorf("exercise %s: answer %v, but block %s gives %v (%v)", x.ID, in.Answer, x.Block, want, err)
					}
				}
				// Another value a seed may pick gives another answer (every
				// value's scenario is validated when the lab is read).
				for _, vr := range x.Vary {
					val := vr.Values[0]
					if in.Values[vr.Key] == formatSetting(Setting{Key: vr.Key, Value: val}) {
						val = vr.Values[len(vr.Values)-1]
					}
					over := append(slices.Clone(x.Set), Setting{Key: vr.Key, Value: val, Line: vr.Line})
					a, err := x.Answer(ctx, over)
					if err != nil {
						t.Errorf("exercise %s, %s = %v: %v", x.ID, vr.Key, val, err)
					} else if a == in.Answer {
						t.Errorf("exercise %s: %s = %v gives the same answer, %v", x.ID, vr.Key, val, a)
					}
				}
			}
		})
	}
}

// varyOverrides lists the overrides of every combination of the
// exercise's vary values (at most 4 keys of a few values each in the labs).
func varyOverrides(x *Exercise) [][]Setting {
	all := [][]Setting{slices.Clone(x.Set)}
	for _, vr := range x.Vary {
		var next [][]Setting
		for _, over := range all {
			for _, val := range vr.Values {
				next = append(next, append(slices.Clone(over), Setting{Key: vr.Key, Value: val, Line: vr.Line}))
			}
		}
		all = next
	}
	return all
}

func overridesText(over []Setting) string {
	var parts []string
	for _, st := range over {
		parts = append(parts, st.Key+"="+formatSetting(st))
	}
	return strings.Join(parts, " ")
}

var placeholderUse = regexp.MustCompile(`\{[a-z][a-z0-9_]*\}`)

func placeholders(x *Exercise) []string {
	var all []string
	texts := append([]string{x.Question, x.Explain, x.Title, x.ModelAnswer}, x.Hints...)
	for _, s := range append(texts, x.Choices...) {
		all = append(all, placeholderUse.FindAllString(s, -1)...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// exerciseShape is everything two translations must share.
func exerciseShape(x *Exercise) string {
	var set, vary []string
	for _, s := range x.Set {
		set = append(set, fmt.Sprintf("%s=%v", s.Key, s.Value))
	}
	for _, v := range x.Vary {
		vary = append(vary, fmt.Sprintf("%s=%v", v.Key, v.Values))
	}
	// Expectations may quote the language (answer contains "…"); each
	// file's own must hold (TestLabExercises), so only their number counts.
	return fmt.Sprintf("kind=%s block=%s variant=%s set=%v metric=%s call=%d unit=%s tol=%v%%%v vary=%v choices=%d correct=%d correct_when=%q hints=%d explain=%v expects=%d placeholders=%v rubric=%d pass=%d worked=%v",
		x.Kind, x.Block, x.Variant, set, x.Metric, x.Call, x.Unit, x.Tolerance, x.TolerancePct, vary,
		len(x.Choices), x.Correct, x.CorrectWhen, len(x.Hints), x.Explain != "", len(x.Expects), placeholders(x), len(x.Rubric), x.Pass, x.Worked != "")
}

// TestTranslationsAgree: a lab's Korean file has the same exercises as the
// English one (ids, order, scenarios, tolerances, answers), in Korean.
func TestTranslationsAgree(t *testing.T) {
	ctx := context.Background()
	for _, f := range labFiles(t) {
		ko := strings.TrimSuffix(f, ".md") + ".ko.md"
		if _, err := os.Stat(ko); err != nil {
			t.Logf("%s: no Korean translation yet", filepath.Base(f))
			continue
		}
		t.Run(filepath.Base(ko), func(t *testing.T) {
			_, en, err := ReadExercises(f)
			if err != nil {
				t.Fatal(err)
			}
			_, kx, err := ReadExercises(ko)
			if err != nil {
				t.Fatal(err)
			}
			if len(kx) != len(en) {
				t.Fatalf("%d exercises in %s, %d in %s: translate every exercise", len(kx), ko, len(en), f)
			}
			hangul := regexp.MustCompile(`\p{Hangul}`)
			for i := range en {
				a, b := en[i], kx[i]
				if a.ID != b.ID {
					t.Errorf("exercise %d: id %q in English, %q in Korean", i+1, a.ID, b.ID)
					continue
				}
				if sa, sb := exerciseShape(a), exerciseShape(b); sa != sb {
					t.Errorf("exercise %s differs:\n en %s\n ko %s", a.ID, sa, sb)
				}
				// The answers are shared (cached by scenario), so the blocks
				// they come from must run the same scenario.
				if a.block != nil && (b.block == nil || ScenarioDiff(a.block, b.block) != "") {
					t.Errorf("exercise %s: block %s differs between the languages", a.ID, a.Block)
				}
				if !hangul.MatchString(b.Question) {
					t.Errorf("%s:%d: exercise %s: the question is not in Korean", ko, b.FenceLine, b.ID)
				}
				// The same numbers: the answer of the lab's own scenario, and
				// for other seeds the same picks (the answer follows from the
				// block, which is the same, and the picks).
				ia, err1 := a.InstanceCached(ctx, 0, testAnswers)
				ib, err2 := b.InstanceCached(ctx, 0, testAnswers)
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: %v %v", a.ID, err1, err2)
				}
				if fmt.Sprint(ia.Answer) != fmt.Sprint(ib.Answer) && a.Kind == "number" {
					t.Errorf("exercise %s: answer %v in English, %v in Korean", a.ID, ia.Answer, ib.Answer)
				}
				if fmt.Sprint(ia.Values) != fmt.Sprint(ib.Values) || ia.Correct != ib.Correct {
					t.Errorf("exercise %s: values %v / %v, correct %d / %d", a.ID, ia.Values, ib.Values, ia.Correct, ib.Correct)
				}
				for seed := uint64(1); seed <= 20; seed++ {
					if oa, ob := overridesText(a.Overrides(seed)), overridesText(b.Overrides(seed)); oa != ob {
						t.Errorf("exercise %s seed %d: %s in English, %s in Korean", a.ID, seed, oa, ob)
					}
					if a.Kind == "choice" {
						ca, _ := a.Instance(ctx, seed)
						cb, _ := b.Instance(ctx, seed)
						if ca.Correct != cb.Correct {
							t.Errorf("exercise %s seed %d: the right choice is %d in English, %d in Korean", a.ID, seed, ca.Correct, cb.Correct)
						}
					}
				}
			}
		})
	}
}

const exerciseLab = "+++\ntitle = \"T\"\n+++\n\n```sim {id=\"b\"}\nrequests = 4\nrtt = \"10ms\"\ndns = \"0s\"\ntls = \"none\"\nserver_time = \"0s\"\nresponse_bytes = 100\nexpect = [\"kept.connects == 1\"]\n\n[[variant]]\nname = \"new\"\nreuse = \"none\"\n\n[[variant]]\nname = \"kept\"\nreuse = \"process\"\n```\n\n"

// exLab returns exerciseLab followed by one exercise block whose TOML body
// starts on line 24.
func exLab(body string) string {
	return exerciseLab + "```exercise {id=\"e\"}\n" + body + "\n```\n"
}

func TestExerciseInstance(t *testing.T) {
	src := exLab(`kind = "number"
question = "RTT {rtt}: how long is the 2nd call of {requests}?"
block = "b"
variant = "kept"
set = { rtt = "20ms" }
call = 2
metric = "total_ms"
unit = "ms"
tolerance = "10%"
vary = { rtt = { min = "10ms", max = "50ms", step = "10ms" } }
hints = ["It is {rtt} away."]
explain = "One round trip: {answer} ms. {{literal}}"
expect = ["answer == 20", "answer == b.new.total_ms.p50"]`)
	l, err := Parse("x.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	xs, err := l.Exercises()
	if err != nil {
		t.Fatal(err)
	}
	x := xs[0]
	if x.Line != 24 || x.FenceLine != 23 || len(x.Vary[0].Values) != 5 {
		t.Errorf("line %d, fence %d, vary %v", x.Line, x.FenceLine, x.Vary)
	}
	ctx := context.Background()
	in, err := x.Instance(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if in.Answer != 20.0 || *in.Tolerance != 2 || in.AnswerText != "20 ms" {
		t.Errorf("answer %v ± %v (%s)", in.Answer, *in.Tolerance, in.AnswerText)
	}
	if in.Question != "RTT 20ms: how long is the 2nd call of 4?" || in.Hints[0] != "It is 20ms away." || in.Explain != "One round trip: 20 ms. {literal}" {
		t.Errorf("texts %q %q %q", in.Question, in.Hints, in.Explain)
	}
	if in.Scenario.Command != "sim run --block b --set rtt=20ms x.md" || in.Scenario.Set["rtt"] != "20ms" {
		t.Errorf("scenario %+v", in.Scenario)
	}
	res, err := l.Run(ctx, nil, RunOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range x.CheckExpects(in, map[string]*BlockResult{"b": res[0]}) {
		if !c.OK {
			t.Errorf("%s: got %s", c.Expect, c.Got)
		}
	}
	// Seeds: the same seed gives the same question; the answer follows the
	// picked RTT; several seeds give several RTTs.
	rtts := map[string]bool{}
	for seed := uint64(1); seed <= 40; seed++ {
		a, err := x.Instance(ctx, seed)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := x.Instance(ctx, seed)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("seed %d not deterministic", seed)
		}
		rtt := a.Values["rtt"]
		rtts[rtt] = true
		var ms float64
		fmt.Sscanf(rtt, "%fms", &ms)
		if a.Answer != ms {
			t.Errorf("seed %d: rtt %s, answer %v", seed, rtt, a.Answer)
		}
	}
	if len(rtts) < 4 {
		t.Errorf("40 seeds picked only %v", rtts)
	}
	// A metric expression over two variants.
	src2 := exLab(`kind = "number"
question = "Saved?"
block = "b"
metric = "new.total_ms.p50 - kept.total_ms.p50"
tolerance = 1
expect = ["answer ≈ 20 ±1"]`)
	l2, _ := Parse("x.md", []byte(src2))
	xs2, err := l2.Exercises()
	if err != nil {
		t.Fatal(err)
	}
	in2, err := xs2[0].Instance(ctx, 0)
	// new: every call connects, 2 RTT = 20 ms; kept: 3 of 4 calls reuse, 10 ms.
	if err != nil || in2.Answer != 10.0 {
		t.Errorf("saved: %v %v", in2.Answer, err)
	}
}

func TestChoiceInstance(t *testing.T) {
	src := exLab(`kind = "choice"
question = "Which?"
choices = ["a", "b", "c", "d", "e"]
correct = 3
block = "b"
variant = "kept"
expect = ["answer == \"c\"", "b.kept.connects == 1"]`)
	l, _ := Parse("x.md", []byte(src))
	xs, err := l.Exercises()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in, _ := xs[0].Instance(ctx, 0)
	if in.Correct != 3 || in.Answer != "c" || strings.Join(in.Choices, "") != "abcde" {
		t.Errorf("unseeded %+v", in)
	}
	orders := map[string]bool{}
	for seed := uint64(1); seed <= 30; seed++ {
		in, _ := xs[0].Instance(ctx, seed)
		if in.Choices[in.Correct-1] != "c" {
			t.Fatalf("seed %d: correct %d of %v", seed, in.Correct, in.Choices)
		}
		orders[strings.Join(in.Choices, "")] = true
	}
	if len(orders) < 10 {
		t.Errorf("30 seeds gave %d orders", len(orders))
	}
	for input, want := range map[string]bool{"3": true, " 3 ": true, "c": true, "c)": true, "2": false} {
		v, err := in.Check(input)
		if err != nil || v.OK != want {
			t.Errorf("Check(%q) = %+v, %v", input, v, err)
		}
	}
	for _, bad := range []string{"0", "6", "z", "", "three"} {
		if _, err := in.Check(bad); err == nil || !strings.Contains(err.Error(), "1 to 5") {
			t.Errorf("Check(%q): %v", bad, err)
		}
	}
}

// TestComputedChoice: with correct_when the model picks the right choice
// for each seed's values; the data a page reads computes the same.
func TestComputedChoice(t *testing.T) {
	src := exLab(`kind = "choice"
question = "The server is {rtt} away. A kept call takes?"
choices = ["under 15 ms", "15 ms or more", "no time at all"]
correct_when = ["total_ms.p50 < 15", "kept.total_ms.p50 >= 15", ""]
block = "b"
variant = "kept"
vary = { rtt = ["5ms", "10ms", "20ms", "30ms"] }
expect = ["answer == \"under 15 ms\""]`)
	l, err := Parse("x.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	xs, err := l.Exercises()
	if err != nil {
		t.Fatal(err)
	}
	x := xs[0]
	if !x.Computed() || x.Correct != 0 {
		t.Fatalf("computed %v, correct %d", x.Computed(), x.Correct)
	}
	d, err := l.Data()
	if err != nil {
		t.Fatal(err)
	}
	ys, _ := fromJSON(t, d).Exercises()
	ctx := context.Background()
	rights := map[string]bool{}
	for seed := uint64(0); seed <= 30; seed++ {
		in, err := x.Instance(ctx, seed)
		if err != nil {
			t.Fatal(err)
		}
		want := "under 15 ms"
		if r := in.Values["rtt"]; r == "20ms" || r == "30ms" {
			want = "15 ms or more"
		}
		if in.Answer != want || in.Choices[in.Correct-1] != want {
			t.Errorf("seed %d, rtt %s: answer %v (%d of %v), want %s", seed, in.Values["rtt"], in.Answer, in.Correct, in.Choices, want)
		}
		if x.Choices[x.ChoiceOrder(seed)[in.Correct-1]] != want {
			t.Errorf("seed %d: ChoiceOrder does not map the shown choice back", seed)
		}
		if g, err := ys[0].Instance(ctx, seed); err != nil || !reflect.DeepEqual(g, in) {
			t.Errorf("seed %d: from data %+v, %v; read %+v", seed, g, err, in)
		}
		rights[want] = true
	}
	if len(rights) != 2 {
		t.Errorf("30 seeds had right choices %v", rights)
	}
	// None or two holding is an error at correct_when's line, with the values.
	for _, when := range []string{`["total_ms.p50 < 1", "total_ms.p50 > 100", ""]`, `["total_ms.p50 > 1", "total_ms.p50 > 2", ""]`} {
		l, _ := Parse("x.md", []byte(strings.Replace(src, `["total_ms.p50 < 15", "kept.total_ms.p50 >= 15", ""]`, when, 1)))
		xs, err := l.Exercises()
		if err != nil {
			t.Fatal(err)
		}
		_, err = xs[0].Instance(ctx, 3)
		if err == nil || !strings.Contains(err.Error(), "x.md:27:") || !strings.Contains(err.Error(), "exactly one") || !strings.Contains(err.Error(), "rtt=") {
			t.Errorf("%s: %v", when, err)
		}
	}
}

func TestNumberCheck(t *testing.T) {
	tol := 2.2
	in := &Instance{Kind: "number", Unit: "ms", Answer: 22.0, Tolerance: &tol}
	for input, want := range map[string]Verdict{
		"22":      {OK: true, Value: 22},
		"24.2":    {OK: true, Value: 24.2},
		"19.8 ms": {OK: true, Value: 19.8},
		"~21ms":   {OK: true, Value: 21},
		"25":      {OK: false, Direction: "high", Value: 25},
		"1,000":   {OK: false, Direction: "high", Value: 1000},
		"-3":      {OK: false, Direction: "low", Value: -3},
		"1e1":     {OK: false, Direction: "low", Value: 10},
	} {
		got, err := in.Check(input)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Check(%q) = %+v, %v; want %+v", input, got, err, want)
		}
	}
	for _, bad := range []string{"", "twenty", "22 s", "1,00", "NaN", "Inf"} {
		if _, err := in.Check(bad); err == nil || !strings.Contains(err.Error(), "want a number (in ms)") {
			t.Errorf("Check(%q): %v", bad, err)
		}
	}
	for f, want := range map[float64]string{22: "22", 92.86: "92.9", 47.053315: "47.1", 0.35: "0.35", 28232: "28232", 470.535: "471", 1.5: "1.5"} {
		if got := FormatNumber(f); got != want {
			t.Errorf("FormatNumber(%v) = %s, want %s", f, got, want)
		}
	}
}

// TestBadExercises: every mistake in an exercise block is reported with the
// file, the line and what is wrong.
func TestBadExercises(t *testing.T) {
	num := "kind = \"number\"\nquestion = \"Q?\"\nblock = \"b\"\nvariant = \"kept\"\nmetric = \"connects\"\ntolerance = 0\n"
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"no id", exerciseLab + "```exercise\nkind = \"explain\"\n```\n", []string{"x.md:23:", "needs an id"}},
		{"bad id", exerciseLab + "```exercise {id=\"A b\"}\n```\n", []string{"x.md:23:", "lower-case"}},
		{"duplicate id", exLab("kind = \"explain\"\nquestion = \"q\"\nmodel_answer = \"a\"") + "\n```exercise {id=\"e\"}\n```\n", []string{"x.md:29:", "twice", "line 23"}},
		{"malformed TOML", exLab("kind = \"number\"\nquestion = \"Q"), []string{"x.md:25:", `exercise "e"`, "TOML"}},
		{"scenario key at the top", exLab(num + "rtt = \"20ms\""), []string{"x.md:30:", `unknown key "rtt"`, "set = {"}},
		{"typed answer", exLab(num + "answer = 22"), []string{"x.md:30:", "computed by the model"}},
		{"no kind", exLab("question = \"Q\""), []string{"x.md:23:", "kind is missing"}},
		{"bad kind", exLab("kind = \"essay\""), []string{"x.md:24:", "number, choice, explain"}},
		{"no question", exLab("kind = \"explain\"\nmodel_answer = \"a\""), []string{"x.md:23:", "question is missing"}},
		{"no metric", exLab("kind = \"number\"\nquestion = \"Q\"\nblock = \"b\"\ntolerance = 1"), []string{"x.md:23:", "metric is missing"}},
		{"no tolerance", exLab("kind = \"number\"\nquestion = \"Q\"\nblock = \"b\"\nvariant = \"kept\"\nmetric = \"connects\""), []string{"x.md:23:", "tolerance is missing"}},
		{"bad tolerance", exLab(num[:len(num)-len("tolerance = 0\n")] + "tolerance = \"ten\""), []string{"x.md:29:", "tolerance", "10%"}},
		{"negative tolerance", exLab(num[:len(num)-len("tolerance = 0\n")] + "tolerance = -1"), []string{"x.md:29:", "0 or more"}},
		{"unknown block", exLab("kind = \"number\"\nquestion = \"Q\"\n\nblock = \"nope\"\nmetric = \"connects\"\ntolerance = 1"), []string{"x.md:27:", `block "nope"`, "blocks: b"}},
		{"unknown variant", exLab("kind = \"number\"\nquestion = \"Q\"\nblock = \"b\"\nvariant = \"nope\"\nmetric = \"connects\"\ntolerance = 1"), []string{"x.md:27:", `variant "nope"`, "new, kept"}},
		{"variant needed", exLab("kind = \"number\"\nquestion = \"Q\"\nblock = \"b\"\nmetric = \"connects\"\ntolerance = 1"), []string{"x.md:27:", "several variants", "new, kept"}},
		{"unknown metric", exLab(strings.Replace(num, "connects\"", "connectz\"", 1)), []string{"x.md:28:", "connectz"}},
		{"call with a summary metric", exLab(num + "call = 2"), []string{"x.md:28:", "with call = 2", "total_ms"}},
		{"bad call", exLab(num + "call = 0"), []string{"x.md:30:", "call"}},
		{"call beyond the run", exLab(strings.Replace(num, "connects\"", "total_ms\"", 1) + "call = 9"), []string{"x.md:30:", "only 4 calls, no call 9"}},
		{"set unknown key", exLab(num + "\n[set]\nrtts = \"1ms\""), []string{"x.md:32:", "rtts", `did you mean "rtt"`}},
		{"set bad value", exLab(num + "set = { rtt = \"-1ms\" }"), []string{"x.md:30:", "rtt", "out of range"}},
		{"set not a table", exLab(num + "set = 3"), []string{"x.md:30:", "set: want a table"}},
		{"set makes the scenario invalid", exLab(num + "set = { load = \"open\" }"), []string{"x.md:30:", `variant "kept" of block "b"`, "rate"}},
		{"vary bad value", exLab(num + "vary = { rtt = [\"1ms\", \"2\"] }"), []string{"x.md:30:", "vary.rtt", "unit"}},
		{"vary unknown key", exLab(num + "vary = { rttt = [\"1ms\", \"2ms\"] }"), []string{"x.md:30:", "rttt", "did you mean"}},
		{"vary huge range", exLab(num + "vary = { requests = { min = 1, max = 100000, step = 1 } }"), []string{"x.md:30:", "at most 1000"}},
		{"vary value invalid scenario", exLab(num + "\n[vary]\nrequests = [4, 0]"), []string{"x.md:32:", "vary requests = 0", "requests or duration"}},
		{"one choice", exLab("kind = \"choice\"\nquestion = \"Q\"\nchoices = [\"a\"]\ncorrect = 1"), []string{"x.md:26:", "at least 2"}},
		{"correct out of range", exLab("kind = \"choice\"\nquestion = \"Q\"\nchoices = [\"a\", \"b\"]\ncorrect = 3"), []string{"x.md:27:", "1 to 2"}},
		{"choices in a number", exLab(num + "choices = [\"a\", \"b\"]"), []string{"x.md:30:", `belongs to kind = "choice"`}},
		{"correct and correct_when", exLab("kind = \"choice\"\nquestion = \"Q\"\nchoices = [\"a\", \"b\"]\nblock = \"b\"\nvariant = \"kept\"\ncorrect = 1\ncorrect_when = [\"connects > 1\", \"connects <= 1\"]"), []string{"x.md:29:", "write one"}},
		{"correct_when without block", exLab("kind = \"choice\"\nquestion = \"Q\"\nchoices = [\"a\", \"b\"]\ncorrect_when = [\"connects > 1\", \"\"]"), []string{"x.md:27:", "needs block"}},
		{"correct_when too short", exLab("kind = \"choice\"\nquestion = \"Q\"\nchoices = [\"a\", \"b\"]\nblock = \"b\"\nvariant = \"kept\"\ncorrect_when = [\"connects > 1\"]"), []string{"x.md:29:", "list of 2 expectations"}},
		{"correct_when one choice only", exLab("kind = \"choice\"\nquestion = \"Q\"\nchoices = [\"a\", \"b\"]\nblock = \"b\"\nvariant = \"kept\"\ncorrect_when = [\"connects > 1\", \"\"]"), []string{"x.md:29:", "at least 2 choices"}},
		{"correct_when bad metric", exLab("kind = \"choice\"\nquestion = \"Q\"\nchoices = [\"a\", \"b\"]\nblock = \"b\"\nvariant = \"kept\"\ncorrect_when = [\"connectz > 1\", \"connects <= 1\"]"), []string{"x.md:29:", "correct_when[0]", "connectz"}},
		{"correct_when no comparison", exLab("kind = \"choice\"\nquestion = \"Q\"\nchoices = [\"a\", \"b\"]\nblock = \"b\"\nvariant = \"kept\"\ncorrect_when = [\"connects\", \"connects <= 1\"]"), []string{"x.md:29:", "correct_when[0]", "no comparison"}},
		{"correct_when in a number", exLab(num + "correct_when = [\"connects > 1\", \"connects <= 1\"]"), []string{"x.md:30:", `belongs to kind = "choice"`}},
		{"no model answer", exLab("kind = \"explain\"\nquestion = \"Q\""), []string{"x.md:23:", "model_answer is missing"}},
		{"set without block", exLab("kind = \"explain\"\nquestion = \"Q\"\nmodel_answer = \"a\"\nset = { rtt = \"1ms\" }"), []string{"x.md:27:", "needs block"}},
		{"unknown placeholder", exLab(strings.Replace(num, "Q?", "At {rtx}?", 1)), []string{"x.md:25:", "{rtx}", "not a scenario key"}},
		{"answer in the question", exLab(strings.Replace(num, "Q?", "Is it {answer}?", 1)), []string{"x.md:25:", "{answer} may only appear in explain"}},
		{"bad expectation", exLab(num + "expect = [\"answer ≈ 3\"]"), []string{"x.md:30:", "tolerance"}},
		{"expectation on a bad metric", exLab(num + "expect = [\n  \"answer == 1\",\n  \"b.kept.connectz == 1\",\n]"), []string{"x.md:32:", "connectz"}},
		{"expect in explain", exLab("kind = \"explain\"\nquestion = \"Q\"\nmodel_answer = \"a\"\nexpect = [\"1 == 1\"]"), []string{"x.md:27:", "no answer to check"}},
		{"hint not a string", exLab(num + "hints = [\"ok\", 3]"), []string{"x.md:30:", "hints[1]"}},
		{"metric gives no number", exLab(strings.Replace(num, "connects\"", "first_port_error_s\"", 1)), []string{"x.md:28:", "not a number"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Parse("x.md", []byte(c.src))
			if err != nil {
				t.Fatalf("the lab itself: %v", err)
			}
			xs, err := l.Exercises()
			if err == nil {
				for _, x := range xs {
					if _, err = x.Instance(context.Background(), 0); err != nil {
						break
					}
				}
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestTierPlaceholders: a question names a tier's key as {tier.NAME.KEY};
// a tier the block does not have is refused with the key.
func TestTierPlaceholders(t *testing.T) {
	got := fillPlaceholders("{tier.app.workers} × {threads}, {{literal}}", func(tok, key string) string { return "<" + key + ">" })
	if got != "<tier.app.workers> × <threads>, <>literal<>" {
		t.Errorf("filled: %q", got)
	}
	src := "```sim {id=\"b\"}\ntls = \"none\"\ndns = \"0s\"\n[[tier]]\nname = \"app\"\n[[tier]]\nname = \"db\"\n```\n\n" +
		"```exercise {id=\"x\"}\nkind = \"number\"\nquestion = \"{tier.api.workers} workers?\"\nblock = \"b\"\nmetric = \"requests\"\ntolerance = 0\n```\n"
	l, err := Parse("bad.md", []byte(src))
	if err == nil {
		_, err = l.Exercises()
	}
	if err == nil || !strings.Contains(err.Error(), "tier.api.workers") {
		t.Errorf("a placeholder of a tier the block lacks: %v", err)
	}
}
