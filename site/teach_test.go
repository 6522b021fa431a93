package site

// Teaching checks on the pages' sources (no build): the Korean pages keep
// the glossary's terms, both languages link to the same pages, every page
// opens with what it teaches and how long it takes (and says so truly), and
// no prose states a block's result above the point where the page asks the
// reader to predict it.

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/lab"
	"github.com/pelletier/go-toml/v2"
)

// glossary is site/data/glossary.toml.
type glossary struct {
	Term []struct {
		En    string   `toml:"en"`
		Also  []string `toml:"also"`
		Ko    string   `toml:"ko"`
		Keep  bool     `toml:"keep"`
		Avoid []string `toml:"avoid"`
		Why   string   `toml:"why"`
	} `toml:"term"`
	Proper struct {
		Words   []string `toml:"words"`
		Phrases []string `toml:"phrases"`
	} `toml:"proper"`
}

func readGlossary(t testing.TB) *glossary {
	t.Helper()
	src, err := os.ReadFile("data/glossary.toml")
	if err != nil {
		t.Fatal(err)
	}
	var g glossary
	if err := toml.Unmarshal(src, &g); err != nil {
		t.Fatalf("site/data/glossary.toml: %v", err)
	}
	return &g
}

// koreanTexts are the Korean UI strings a page shows besides its own file.
func koreanTexts(t testing.TB) (string, string) {
	t.Helper()
	src, err := os.ReadFile("../sim/i18n/ko.toml")
	if err != nil {
		t.Fatal(err)
	}
	return "sim/i18n/ko.toml", string(src)
}

// Every Korean page (front matter, prose, blocks, exercises) and the Korean
// UI strings keep the glossary: no calque it names, and the Korean word for
// every term its English page uses.
func TestGlossary(t *testing.T) {
	g := readGlossary(t)
	if len(g.Term) < 10 {
		t.Fatalf("the glossary has %d terms", len(g.Term))
	}
	all := pages(t)
	type text struct{ path, body string }
	var kos []text
	for _, name := range sortedNames(all) {
		if ko := all[name]["ko"]; ko != nil {
			src, err := os.ReadFile(ko.path)
			if err != nil {
				t.Fatal(err)
			}
			kos = append(kos, text{ko.path, string(src)})
		}
	}
	path, ui := koreanTexts(t)
	kos = append(kos, text{path, ui})
	for _, term := range g.Term {
		if term.En == "" || term.Ko == "" || term.Why == "" {
			t.Errorf("glossary term %+v: en, ko and why are needed", term)
			continue
		}
		for _, a := range term.Avoid {
			re, err := regexp.Compile(a)
			if err != nil {
				t.Errorf("glossary %q: avoid %q: %v", term.En, a, err)
				continue
			}
			for _, k := range kos {
				for _, loc := range re.FindAllStringIndex(k.body, -1) {
					line := 1 + strings.Count(k.body[:loc[0]], "\n")
					t.Errorf("%s:%d: %q: write %q (%s)", k.path, line, k.body[loc[0]:loc[1]], term.Ko, term.Why)
				}
			}
		}
	}
	// A term the English page uses appears in its Korean page in the
	// glossary's form.
	for _, name := range sortedNames(all) {
		en, ko := all[name]["en"], all[name]["ko"]
		if en == nil || ko == nil {
			continue
		}
		enText := strings.ToLower(prose(en.body))
		koSrc, _ := os.ReadFile(ko.path)
		for _, term := range g.Term {
			uses := false
			for _, w := range append([]string{term.En}, term.Also...) {
				if regexp.MustCompile(`\b` + regexp.QuoteMeta(strings.ToLower(w)) + `\b`).MatchString(enText) {
					uses = true
				}
			}
			if uses && !strings.Contains(string(koSrc), term.Ko) {
				t.Errorf("%s uses %q, but %s never writes %q (the glossary's word for it)", en.path, term.En, ko.path, term.Ko)
			}
		}
	}
}

// TestGlossaryCanFail: a calque on a Korean page is named.
func TestGlossaryCanFail(t *testing.T) {
	g := readGlossary(t)
	found := 0
	for _, term := range g.Term {
		for _, a := range term.Avoid {
			for _, s := range []string{"차가운 호출 하나", "닫힌 부하와 열린 부하", "연결 하나의 값"} {
				if regexp.MustCompile(a).MatchString(s) {
					found++
				}
			}
		}
	}
	if found < 4 {
		t.Errorf("the glossary flags %d of the four calques", found)
	}
}

var pageLinkRE = regexp.MustCompile(`\{\{<\s*(?:rel)?ref\s+"([^"#]+)(#[^"]*)?"\s*>\}\}|\]\((https?://[^)\s]+)\)`)

// pageLinks lists the pages and addresses a page links to, with how often.
func pageLinks(body string) map[string]int {
	out := map[string]int{}
	for _, m := range pageLinkRE.FindAllStringSubmatch(body, -1) {
		target := m[1]
		if target == "" {
			target = m[3]
		}
		out[strings.TrimPrefix(target, "/")]++
	}
	return out
}

// The English and Korean pages link to the same pages and addresses, as
// often.
func TestSameLinks(t *testing.T) {
	all := pages(t)
	checked := 0
	for _, name := range sortedNames(all) {
		en, ko := all[name]["en"], all[name]["ko"]
		if en == nil || ko == nil {
			continue
		}
		el, kl := pageLinks(en.body), pageLinks(ko.body)
		var targets []string
		for k := range el {
			targets = append(targets, k)
		}
		for k := range kl {
			if _, ok := el[k]; !ok {
				targets = append(targets, k)
			}
		}
		slices.Sort(targets)
		for _, k := range targets {
			checked++
			if el[k] != kl[k] {
				t.Errorf("%s links to %s %d time(s), %s %d time(s)", en.path, k, el[k], ko.path, kl[k])
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d links checked", checked)
	}
}

func fmtList(xs []string) string { return fmt.Sprintf("%q", xs) }

// ---------------------------------------------------------------------------
// The top of every page: objectives, prerequisites, minutes.

// introPages are the pages that open with the intro: every lab and content
// page but the home page, which is the table of contents (its own "What you
// will learn" section lists the labs).
func introPages(all map[string]map[string]*page) []string {
	var out []string
	for _, name := range sortedNames(all) {
		if name != "_index" {
			out = append(out, name)
		}
	}
	return out
}

// intro is a page's intro front matter.
type intro struct {
	minutes    int
	objectives []string
	prereqs    []prereq
}

type prereq struct{ page, know string }

func readIntro(p *page) (*intro, []string) {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	in := &intro{}
	switch m := p.front["minutes"].(type) {
	case int64:
		in.minutes = int(m)
	case nil:
		fail("no minutes (how long the page takes: minutes = 15)")
	default:
		fail("minutes = %v: want a whole number", m)
	}
	if in.minutes < 0 || in.minutes > 120 {
		fail("minutes = %d: want 1 to 120", in.minutes)
	}
	obj, _ := p.front["objectives"].([]any)
	for _, o := range obj {
		if s, ok := o.(string); ok && strings.TrimSpace(s) != "" {
			in.objectives = append(in.objectives, s)
		} else {
			fail("objectives: %v is not a sentence", o)
		}
	}
	if n := len(in.objectives); n < 2 || n > 4 {
		fail("%d objectives: want 2 to 4 (objectives = [\"…\", \"…\"], what the reader will be able to do)", n)
	}
	pre, ok := p.front["prerequisites"].([]any)
	if !ok {
		fail("no prerequisites (prerequisites = [{ page = \"anatomy.md\", know = \"…\" }])")
	}
	for _, e := range pre {
		m, ok := e.(map[string]any)
		if !ok {
			fail("prerequisites: %v: want { page = \"…\", know = \"…\" }", e)
			continue
		}
		var pr prereq
		pr.page, _ = m["page"].(string)
		pr.know, _ = m["know"].(string)
		for k := range m {
			if k != "page" && k != "know" {
				fail("prerequisites: unknown key %q (page, know)", k)
			}
		}
		if strings.TrimSpace(pr.know) == "" {
			fail("prerequisites: %v: say what to know (know = \"…\")", m)
		}
		if pr.page != "" {
			if _, err := os.Stat(pagePath(pr.page)); err != nil {
				fail("prerequisites: page %q does not exist", pr.page)
			}
		}
		in.prereqs = append(in.prereqs, pr)
	}
	return in, problems
}

// pagePath is the file of a relref-style page name.
func pagePath(ref string) string {
	ref = strings.TrimSuffix(strings.TrimPrefix(ref, "/"), ".md")
	if rest, ok := strings.CutPrefix(ref, "labs/"); ok {
		return "../labs/" + rest + ".md"
	}
	return "../content/" + ref + ".md"
}

// Every lab and content page (the home page aside) says, in both
// languages, what the reader will learn (2–4 objectives), what to know
// first (with a link to the page that teaches it), and how long it takes.
func TestPageIntro(t *testing.T) {
	all := pages(t)
	for _, name := range introPages(all) {
		en, ko := all[name]["en"], all[name]["ko"]
		var ins [2]*intro
		for i, p := range []*page{en, ko} {
			if p == nil {
				continue
			}
			in, problems := readIntro(p)
			for _, pr := range problems {
				t.Errorf("%s: front matter: %s", p.path, pr)
			}
			ins[i] = in
			if strings.HasPrefix(p.path, "../labs/") && len(in.prereqs) == 0 {
				t.Errorf("%s: a lab names at least one prerequisite", p.path)
			}
			if p.lang == "ko" {
				for _, o := range in.objectives {
					if hangulShare(inlineCodeRE.ReplaceAllString(o, "")) < 0.5 {
						t.Errorf("%s: objective %q is not in Korean", p.path, o)
					}
				}
			}
		}
		if ins[0] == nil || ins[1] == nil {
			continue
		}
		e, k := ins[0], ins[1]
		if e.minutes != k.minutes || len(e.objectives) != len(k.objectives) || len(e.prereqs) != len(k.prereqs) {
			t.Errorf("%s and %s: minutes %d/%d, %d/%d objectives, %d/%d prerequisites: want the same in both languages",
				en.path, ko.path, e.minutes, k.minutes, len(e.objectives), len(k.objectives), len(e.prereqs), len(k.prereqs))
			continue
		}
		for i := range e.prereqs {
			if e.prereqs[i].page != k.prereqs[i].page {
				t.Errorf("%s: prerequisite %d is page %q, %s has %q", ko.path, i+1, k.prereqs[i].page, en.path, e.prereqs[i].page)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Reading time.

// What a page takes a newcomer, in minutes: its prose at 200 words a
// minute (the blocks' titles and notes included), plus the time spent on
// what it asks the reader to do. The costs are estimates of a first-time
// reader's pace, stated here so the figures can be argued with:
const (
	wordsPerMinute = 200
	// A block's widget shows its variants side by side (waterfall,
	// connections, summary): about a minute to read what it shows.
	minutesPerBlock = 1.0
	// A prediction: read the question, commit to a number or a choice.
	minutesPerPredict = 0.5
	// The target is about 15 minutes a lab. "About" allows a
	// fifth more: a lab over 18 minutes must be cut or split.
	readingTarget = 15.0
	readingLimit  = 18.0
)

// minutesPerExercise: a number means working it out on paper; a choice
// means reading four answers and weighing them; an explanation means
// writing a few sentences and comparing them with the key points.
var minutesPerExercise = map[string]float64{"number": 4, "choice": 2, "explain": 5}

// overBudget lists the pages over readingLimit today, with their reading
// time: each may not grow, and leaves the list once it is cut or split to
// fit (the test says when).
var overBudget = map[string]float64{}

// readingTime is a page's reading time and its parts.
type readingTime struct {
	words               int
	blocks, predicts    int
	exercises           map[string]int
	prose, doing, total float64
}

var wordRE = regexp.MustCompile(`[\pL\pN][\pL\pN_'’.-]*`)

func pageReadingTime(t testing.TB, p *page) readingTime {
	t.Helper()
	rt := readingTime{exercises: map[string]int{}}
	text := prose(p.body)
	for _, b := range p.lab.Blocks {
		text += " " + b.Title + " " + b.Note
		if b.Predict != nil {
			rt.predicts++
		}
	}
	rt.words = len(wordRE.FindAllString(text, -1))
	rt.blocks = len(p.lab.Blocks)
	xs, err := p.lab.Exercises()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range xs {
		rt.exercises[string(x.Kind)]++
		rt.doing += minutesPerExercise[string(x.Kind)]
	}
	rt.prose = float64(rt.words) / wordsPerMinute
	rt.doing += float64(rt.blocks)*minutesPerBlock + float64(rt.predicts)*minutesPerPredict
	rt.total = rt.prose + rt.doing
	return rt
}

// Each page's reading time, as a table (go test -run TestReadingTime -v
// ./site prints it): within the limit, or on the list of pages to cut, and
// the minutes the page states are within 2 minutes (or 15%) of it.
func TestReadingTime(t *testing.T) {
	all := pages(t)
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %6s %6s %7s %6s %-26s %6s %6s %s\n", "page", "words", "prose", "blocks", "pred.", "exercises (n/c/e)", "total", "stated", "")
	for _, name := range introPages(all) {
		en := all[name]["en"]
		if en == nil {
			continue
		}
		rt := pageReadingTime(t, en)
		in, _ := readIntro(en)
		verdict := "ok"
		limit, listed := overBudget[name]
		switch {
		case listed && rt.total > limit+0.5:
			verdict = "GREW"
			t.Errorf("%s: %.1f minutes, more than the %.1f it was listed with: cut it (target %.0f, limit %.0f)", en.path, rt.total, limit, readingTarget, readingLimit)
		case listed && rt.total <= readingLimit:
			verdict = "fits now"
			t.Errorf("%s: %.1f minutes, within the limit of %.0f: take it off overBudget", en.path, rt.total, readingLimit)
		case listed:
			verdict = "over, listed: cut or split"
		case rt.total > readingLimit:
			verdict = "OVER"
			t.Errorf("%s: %.1f minutes of reading and exercises, over the limit of %.0f (target about %.0f): cut or split it", en.path, rt.total, readingLimit, readingTarget)
		}
		if d := float64(in.minutes) - rt.total; d > max(2, 0.15*rt.total) || -d > max(2, 0.15*rt.total) {
			t.Errorf("%s: minutes = %d, but the page takes about %.1f minutes (%d words, %d blocks, %d predictions, exercises %v): write minutes = %.0f",
				en.path, in.minutes, rt.total, rt.words, rt.blocks, rt.predicts, rt.exercises, rt.total)
		}
		ex := fmt.Sprintf("%d/%d/%d = %.0f min", rt.exercises["number"], rt.exercises["choice"], rt.exercises["explain"],
			rt.doing-float64(rt.blocks)*minutesPerBlock-float64(rt.predicts)*minutesPerPredict)
		fmt.Fprintf(&b, "%-22s %6d %6.1f %7d %6d %-26s %6.1f %6d %s\n", name, rt.words, rt.prose, rt.blocks, rt.predicts, ex, rt.total, in.minutes, verdict)
	}
	t.Logf("reading time at %d words a minute; a block %.0f min, a prediction %.1f min, exercises %v min; limit %.0f min\n%s",
		wordsPerMinute, minutesPerBlock, minutesPerPredict, minutesPerExercise, readingLimit, b.String())
}

// ---------------------------------------------------------------------------
// Predict before you see: no prose states a block's result above the point
// where the page asks for a prediction of it.

// A statedResult is a place where a page's prose gives a predicted result
// away before the reader was asked.
type statedResult struct {
	line int
	text string
}

var (
	numberWords = map[string]float64{"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
		"seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20,
		"하나": 1, "한": 1, "둘": 2, "두": 2, "셋": 3, "세": 3, "넷": 4, "네": 4, "다섯": 5, "여섯": 6,
		"일곱": 7, "여덟": 8, "아홉": 9, "열": 10, "열두": 12, "스무": 20}
	tokenRE = regexp.MustCompile(`[\pL\pN][\pL\pN_,.]*`)
)

// resultsAbove lists what the prose above line (the predict point: the
// block's fence) says of block's predicted result: a {{< sim >}} of the
// block, a duration within the answer's tolerance when the metric is a
// time, or a count (in digits or words) next to the prediction's unit.
func resultsAbove(p *page, b *lab.Block, answer *lab.PredictAnswer, line int) []statedResult {
	var out []statedResult
	above := p.body
	if n := line - p.bodyLine; n >= 0 {
		lines := strings.Split(p.body, "\n")
		above = strings.Join(lines[:min(n, len(lines))], "\n")
	}
	for _, m := range shortcodeRE.FindAllStringSubmatchIndex(above, -1) {
		if above[m[2]:m[3]] != "sim" {
			continue
		}
		args, ok := shortcodeArgs(above[m[4]:m[5]])
		if !ok || len(args) < 3 || args[0] != b.ID || (len(args) == 4 && args[3] != p.name) {
			continue
		}
		out = append(out, statedResult{p.bodyLine + strings.Count(above[:m[0]], "\n"), above[m[0]:m[1]]})
	}
	if answer == nil {
		return out
	}
	text := prose(above)
	scale := 0.0 // the metric's unit in seconds, for a time
	if m := timeMetricRE.FindStringSubmatch(b.Predict.Metric); m != nil && !strings.ContainsAny(b.Predict.Metric, "/*") {
		scale = map[string]float64{"ms": 1e-3, "s": 1}[m[1]]
	}
	// A choice's answer is the value of the choice the model picks.
	target, tol := answer.Value, answer.Tolerance
	if b.Predict.Kind == "choice" && answer.Choice > 0 {
		target, tol = b.Predict.Values[answer.Choice-1], 0
	}
	near := func(v float64) bool { return math.Abs(v-target) <= tol+1e-9*math.Max(1, math.Abs(target)) }
	if scale > 0 {
		for _, n := range scanNumbers(text, p.bodyLine) {
			if n.class == "s" && near(n.value/scale) {
				out = append(out, statedResult{n.line, n.text})
			}
		}
		return out
	}
	unit := strings.ToLower(strings.TrimSpace(b.Predict.Unit))
	if unit == "" {
		return out
	}
	unit = strings.Fields(unit)[0]
	// A count: a number next to the unit's first word ("four connections",
	// "connections: 4", "연결 4개").
	for i, ln := range strings.Split(text, "\n") {
		toks := tokenRE.FindAllString(strings.ToLower(ln), -1)
		for k := range toks {
			toks[k] = strings.TrimRight(toks[k], ".,")
		}
		for j, tok := range toks {
			v, ok := numberWords[tok]
			if !ok {
				digits := strings.TrimRightFunc(tok, func(r rune) bool { return !unicode.IsDigit(r) })
				f, err := strconv.ParseFloat(strings.ReplaceAll(digits, ",", ""), 64)
				if err != nil || digits == "" || strings.IndexFunc(tok, unicode.IsDigit) != 0 {
					continue
				}
				v = f
			}
			if !near(v) {
				continue
			}
			for _, k := range []int{j - 1, j + 1} {
				if k >= 0 && k < len(toks) && strings.HasPrefix(toks[k], unit) {
					out = append(out, statedResult{p.bodyLine + i, tok + " " + toks[k]})
				}
			}
		}
	}
	return out
}

// predictAnswers runs the page's blocks and gives each prediction's answer.
func predictAnswers(t *testing.T, p *page) map[string]*lab.PredictAnswer {
	out := map[string]*lab.PredictAnswer{}
	for id, r := range runPage(t, p) {
		out[id] = r.Predict
	}
	return out
}

// On every page, in both languages: each block that asks for a prediction
// gets an answer from the model, its question states no number the block
// does not, and no prose above the block states its result.
func TestPredictOrder(t *testing.T) {
	all := pages(t)
	reg := registry(t, all)
	asked := 0
	for _, name := range sortedNames(all) {
		en := all[name]["en"]
		if en == nil || len(en.lab.Blocks) == 0 {
			continue
		}
		answers := predictAnswers(t, en)
		allowed := append(blockAllowances(en.lab), reg...)
		for _, p := range all[name] {
			for _, b := range p.lab.Blocks {
				if b.Predict == nil {
					continue
				}
				asked++
				a := answers[b.ID]
				if a == nil {
					t.Errorf("%s:%d: block %q: the model gives no answer to its prediction (metric %q)", p.path, b.Predict.Line, b.ID, b.Predict.Metric)
				}
				for _, n := range scanNumbers(b.Predict.Question, b.Predict.Line) {
					if !admitted(allowed, n) {
						t.Errorf("%s:%d: the prediction's question states %q, which is not a parameter or expectation of a block", p.path, b.Predict.Line, n.text)
					}
				}
				for _, r := range resultsAbove(p, b, a, b.FenceLine) {
					t.Errorf("%s:%d: %s states the result of block %q above its prediction (line %d): move it below the block",
						p.path, r.line, r.text, b.ID, b.FenceLine)
				}
			}
		}
	}
	if asked == 0 {
		t.Error("no block asks for a prediction: the test proves nothing")
	}
}

// TestPredictOrderCanFail: a value given away above the block, as a
// {{< sim >}}, a duration or a count in words, is found; below it, not.
func TestPredictOrderCanFail(t *testing.T) {
	src := "+++\ntitle = \"t\"\n+++\n\nThe call drops to {{< sim \"b\" \"persistent\" \"total_ms.p50\" >}}, about 12 ms.\n" +
		"Four workers open four connections.\n\n" +
		"```sim {id=\"b\"}\nworkers = 4\nrequests = 20\nrtt = \"10ms\"\ndns = \"0s\"\ntls = \"none\"\nserver_time = \"2ms\"\n" +
		"expect = [\"persistent.connects == 4\"]\n%s\n[[variant]]\nname = \"persistent\"\nreuse = \"process\"\n```\n\nBelow: four connections, 12 ms.\n"
	for _, c := range []struct {
		table string
		want  []string
	}{
		{"[predict]\nquestion = \"q\"\nmetric = \"persistent.total_ms.p50\"\ntolerance = \"10%\"\n", []string{`{{< sim "b" "persistent" "total_ms.p50" >}}`, "12 ms"}},
		{"[predict]\nquestion = \"q\"\nmetric = \"persistent.connects\"\nunit = \"connections\"\ntolerance = 0\n", []string{`{{< sim "b" "persistent" "total_ms.p50" >}}`, "four connections"}},
	} {
		body := strings.Replace(src, "%s", c.table, 1)
		l, err := lab.Parse("x.md", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		rs, err := l.Run(context.Background(), nil, lab.RunOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		p := &page{name: "x", path: "x.md", body: body[strings.Index(body, "\nThe")+1:], bodyLine: 5, lab: l}
		var got []string
		for _, r := range resultsAbove(p, l.Blocks[0], rs[0].Predict, l.Blocks[0].FenceLine) {
			got = append(got, r.text)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: found %q, want %q", c.table, got, c.want)
		}
	}
}

// ---------------------------------------------------------------------------
// Misconceptions.

var misconceptionRE = regexp.MustCompile(`(?s)\{\{<\s*misconception\s+(.*?)>\}\}(.*?)\{\{<\s*/misconception\s*>\}\}`)
var namedArgRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// Every misconception states a claim, answers it, and cites sources the
// reference page lists; both languages name the same ones, citing the same.
func TestMisconceptions(t *testing.T) {
	all := pages(t)
	defined := map[string]bool{}
	for _, m := range sourceKeyRE.FindAllStringSubmatch(all["reference"]["en"].body, -1) {
		for _, k := range strings.Split(m[1], "/") {
			defined[k] = true
		}
	}
	total := 0
	for _, name := range sortedNames(all) {
		var cited [2][]string
		for i, lang := range []string{"en", "ko"} {
			p := all[name][lang]
			if p == nil {
				continue
			}
			for _, m := range misconceptionRE.FindAllStringSubmatchIndex(p.body, -1) {
				total++
				line := p.bodyLine + strings.Count(p.body[:m[0]], "\n")
				args := map[string]string{}
				for _, a := range namedArgRE.FindAllStringSubmatch(p.body[m[2]:m[3]], -1) {
					args[a[1]] = a[2]
				}
				if strings.TrimSpace(args["claim"]) == "" {
					t.Errorf("%s:%d: a misconception needs claim=\"…\"", p.path, line)
				}
				if len(strings.Fields(p.body[m[4]:m[5]])) < 10 {
					t.Errorf("%s:%d: answer the claim, with its evidence, inside the shortcode", p.path, line)
				}
				srcs := strings.Fields(args["sources"])
				if len(srcs) == 0 {
					t.Errorf("%s:%d: a misconception cites its evidence: sources=\"L2 …\" (keys of the reference page)", p.path, line)
				}
				for _, s := range srcs {
					if !defined[s] {
						t.Errorf("%s:%d: source %q is not in the reference page's list of sources", p.path, line, s)
					}
				}
				cited[i] = append(cited[i], strings.Join(srcs, " "))
			}
		}
		if !slices.Equal(cited[0], cited[1]) {
			t.Errorf("%s: misconceptions cite %v in English, %v in Korean: translate each one", name, cited[0], cited[1])
		}
	}
	if total == 0 {
		t.Error("no page names a misconception")
	}
}

// The scenario keys' help in Korean (a control's tooltip on Korean pages,
// assets/i18n/params.ko.toml): one entry per key of sim params, none for a
// key that does not exist, in Korean.
func TestParamsKorean(t *testing.T) {
	src, err := os.ReadFile("assets/i18n/params.ko.toml")
	if err != nil {
		t.Fatal(err)
	}
	var ko map[string]any
	if err := toml.Unmarshal(src, &ko); err != nil {
		t.Fatalf("site/assets/i18n/params.ko.toml: %v", err)
	}
	keys := map[string]bool{}
	for _, p := range sim.Params() {
		keys[p.Key] = true
		s, _ := ko[p.Key].(string)
		switch {
		case s == "":
			t.Errorf("site/assets/i18n/params.ko.toml: no Korean help for %s (%q)", p.Key, p.Help)
		case hangulShare(s) == 0:
			t.Errorf("site/assets/i18n/params.ko.toml: %s = %q is not in Korean", p.Key, s)
		}
	}
	for k := range ko {
		if !keys[k] {
			t.Errorf("site/assets/i18n/params.ko.toml: %s is not a scenario key (sim params)", k)
		}
	}
}
