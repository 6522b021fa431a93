package lab

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A gate is a question the reader answers before the page shows its
// answer: a block's [predict] or a closing exercise of kind number, with
// the model's answer and what counts as the same number.
type gate struct {
	name   string
	line   int     // where the page asks it
	answer float64 // the model's
	window float64 // a number this close states it
	unit   string
	seen   string // what the reader saw with the question (title, note, worked example)
}

// proseLine is a line a reader sees: text outside fenced blocks, and the
// front matter's title and summary.
type proseLine struct {
	file string
	line int
	text string
}

var numberRE = regexp.MustCompile(`\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?`)

// prose returns the lines of a page a reader sees, in order.
func prose(file, src string) []proseLine {
	var out []proseLine
	lines := strings.Split(src, "\n")
	fence, front := "", false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case i == 0 && t == "+++":
			front = true
			continue
		case front:
			if t == "+++" {
				front = false
			} else if strings.HasPrefix(t, "summary") || strings.HasPrefix(t, "title") {
				out = append(out, proseLine{file, i + 1, t})
			}
			continue
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		case strings.HasPrefix(t, "```"), strings.HasPrefix(t, "~~~"):
			fence = t[:3]
			continue
		}
		out = append(out, proseLine{file, i + 1, l})
	}
	return out
}

// leaks reports the places in text where a number within g's window
// stands: any such number for an answer of 10 or more, and for a smaller
// one only when the answer's unit follows it (a page says "4 workers"
// without giving away "4 connections").
func (g *gate) leaks(text string) []string {
	var out []string
	for _, ix := range numberRE.FindAllStringIndex(text, -1) {
		raw := text[ix[0]:ix[1]]
		if ix[0] > 0 && strings.ContainsRune("-_./:abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", rune(text[ix[0]-1])) {
			continue // a version, a path, a range's end, a time of day, a name (S1, C12)
		}
		if ix[1] < len(text) && strings.ContainsRune("-_/:", rune(text[ix[1]])) {
			continue
		}
		n, err := strconv.ParseFloat(strings.ReplaceAll(raw, ",", ""), 64)
		if err != nil || math.Abs(n-g.answer) > g.window {
			continue
		}
		if len(raw) == 4 && n >= 1900 && n < 2100 {
			continue // a year
		}
		if math.Abs(g.answer) < 10 {
			rest := strings.ToLower(text[ix[1]:min(len(text), ix[1]+20)])
			if g.unit == "" || !strings.Contains(rest, strings.ToLower(strings.Fields(g.unit)[0])) {
				continue
			}
		}
		out = append(out, raw)
	}
	return out
}

// window is how close a number must be to an answer to state it: as a
// page rounds it (1 % of a number of 100 or more, half a unit of one of
// 10 or more). Not the answer's tolerance: a varied exercise's question
// shows its inputs, which may lie that close to its answer.
func window(answer float64) float64 {
	switch a := math.Abs(answer); {
	case a >= 100:
		return 0.01 * a
	case a >= 10:
		return 0.5
	}
	return 0.05
}

// gates lists a page's questions with the model's answers: each block's
// prediction, and each number exercise for every student's values.
func gates(t *testing.T, l *Lab) []gate {
	t.Helper()
	ctx := context.Background()
	var out []gate
	for _, b := range l.Blocks {
		if b.Predict == nil || b.Predict.Kind != "number" {
			continue
		}
		res, err := l.Run(ctx, []string{b.ID}, RunOptions{})
		if err != nil {
			t.Fatalf("%s: %v", l.File, err)
		}
		if p := res[0].Predict; p != nil {
			out = append(out, gate{name: "prediction of block " + b.ID, line: b.FenceLine, answer: p.Value,
				window: window(p.Value), unit: b.Predict.Unit, seen: b.Title + "\n" + b.Note + "\n" + b.Predict.Question})
		}
	}
	xs, err := l.Exercises()
	if err != nil {
		t.Fatalf("%s: %v", l.File, err)
	}
	cache := NewAnswerCache(256)
	for _, x := range xs {
		if x.Kind != "number" {
			continue
		}
		seen := map[float64]bool{}
		for seed := uint64(0); seed < 24; seed++ {
			in, err := x.InstanceCached(ctx, seed, cache)
			if err != nil {
				t.Fatalf("%s: exercise %s: %v", l.File, x.ID, err)
			}
			v, ok := in.Answer.(float64)
			if !ok || seen[v] {
				continue
			}
			seen[v] = true
			out = append(out, gate{name: "exercise " + x.ID, line: x.FenceLine, answer: v, window: window(v),
				unit: in.Unit, seen: in.Question + "\n" + in.Worked})
		}
	}
	return out
}

// giveAways lists where a page, or the home page of its language, states
// the answer to one of its questions before the reader has answered: in
// the prose above the question, or in what is shown with it.
func giveAways(t *testing.T, file string, src []byte, home []proseLine) []string {
	t.Helper()
	l, err := Parse(file, src)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	lines := prose(file, string(src))
	var out []string
	for _, g := range gates(t, l) {
		for _, pl := range append(append([]proseLine{}, home...), lines...) {
			if pl.file == file && pl.line >= g.line {
				break
			}
			for _, n := range g.leaks(pl.text) {
				out = append(out, fmt.Sprintf("%s:%d: %q states the answer to the %s (%g %s) before it is asked", pl.file, pl.line, n, g.name, g.answer, g.unit))
			}
		}
		for _, n := range g.leaks(g.seen) {
			out = append(out, fmt.Sprintf("%s:%d: %q, shown with the %s, states its answer (%g %s)", file, g.line, n, g.name, g.answer, g.unit))
		}
	}
	return out
}

// TestNoGiveAway: no page tells the reader the answer to a question before
// asking it. For each prediction and each number exercise (every student's
// values), the model's answer must not stand in the prose above the
// question, in the home page of the page's language, or in what the
// question shows with it; the error names the line.
func TestNoGiveAway(t *testing.T) {
	pages, err := filepath.Glob("../../labs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../../content/anatomy.md", "../../content/anatomy.ko.md")
	homes := map[bool][]proseLine{}
	for _, ko := range []bool{false, true} {
		f := "../../content/_index.md"
		if ko {
			f = "../../content/_index.ko.md"
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		homes[ko] = prose(f, string(src))
	}
	for _, p := range pages {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, leak := range giveAways(t, p, src, homes[strings.HasSuffix(p, ".ko.md")]) {
			t.Error(leak)
		}
	}
}

// TestGiveAwayCaught: the test finds an answer put back where it was: the
// port-exhaustion lab's rate at which the ports run out, in its lead.
func TestGiveAwayCaught(t *testing.T) {
	const file = "../../labs/port-exhaustion.md"
	bad := withLead(t, file, func(*Lab) string { return "A client that opens about 470 new connections a second runs out." })
	got := strings.Join(giveAways(t, file, bad, nil), "\n")
	if !strings.Contains(got, `"470"`) {
		t.Errorf("a lead that gives the answer away was not caught:\n%s", got)
	}
}

// A choiceGate is a question whose answer is one of its choices: a
// block's [predict] of kind choice, or a closing exercise of kind choice.
type choiceGate struct {
	name  string
	line  int
	right string
	wrong []string
}

// stopWords are left out of the words a choice and a sentence share.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields("the and for with its it's that this are not was has have had but from into one two its each than then them they their there when what which who how why all any can does doesn't don't only also more most less same about both after before over under per") {
		stopWords[w] = true
	}
}

var wordRE = regexp.MustCompile(`[A-Za-z0-9_'’-]+`)

// contentWords are the words of s of three letters or more, in lower
// case, without the common ones.
func contentWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range wordRE.FindAllString(strings.ToLower(s), -1) {
		w = strings.Trim(w, "'’-")
		if len(w) >= 3 && !stopWords[w] {
			out[strings.TrimSuffix(w, "'s")] = true
		}
	}
	return out
}

func share(of, in map[string]bool) float64 {
	if len(of) == 0 {
		return 0
	}
	n := 0
	for w := range of {
		if in[w] {
			n++
		}
	}
	return float64(n) / float64(len(of))
}

// states reports whether sentence states g's right answer: it holds at
// least three quarters of the right choice's words (three or more), and
// clearly more of them than of any wrong choice's.
func (g *choiceGate) states(sentence string) bool {
	right := contentWords(g.right)
	if len(right) < 3 {
		return false
	}
	words := contentWords(sentence)
	r := share(right, words)
	if r < 0.75 {
		return false
	}
	for _, w := range g.wrong {
		if share(contentWords(w), words) > r-0.1 {
			return false
		}
	}
	return true
}

// sentences splits prose into sentences, each with the line it starts on.
func sentences(lines []proseLine) []proseLine {
	var out []proseLine
	var cur strings.Builder
	start := 0
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, proseLine{lines[0].file, start, t})
		}
		cur.Reset()
	}
	for _, pl := range lines {
		if strings.TrimSpace(pl.text) == "" {
			flush()
			continue
		}
		if cur.Len() == 0 {
			start = pl.line
		}
		for _, part := range sentenceEnd.Split(pl.text, -1) {
			if cur.Len() > 0 {
				cur.WriteByte(' ')
			}
			cur.WriteString(part)
			if !strings.HasSuffix(pl.text, part) {
				flush()
				start = pl.line
			}
		}
	}
	flush()
	return out
}

var sentenceEnd = regexp.MustCompile(`[.!?:](\s+|$)`)

// choiceGates lists a lab's choice questions with their right answers.
func choiceGates(t *testing.T, l *Lab) []choiceGate {
	t.Helper()
	var out []choiceGate
	for _, b := range l.Blocks {
		if b.Predict == nil || b.Predict.Kind != "choice" {
			continue
		}
		res, err := l.Run(context.Background(), []string{b.ID}, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p := res[0].Predict; p != nil && p.Choice > 0 {
			out = append(out, choiceGate{"prediction of block " + b.ID, b.FenceLine, b.Predict.Choices[p.Choice-1], without(b.Predict.Choices, p.Choice-1)})
		}
	}
	xs, err := l.Exercises()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range xs {
		if x.Kind == "choice" && x.Correct > 0 {
			out = append(out, choiceGate{"exercise " + x.ID, x.FenceLine, x.Choices[x.Correct-1], without(x.Choices, x.Correct-1)})
		}
		if x.Kind == "choice" && x.Computed() {
			// Every choice right for one of 24 students is a gate.
			right := map[int]bool{}
			for seed := uint64(0); seed <= 24; seed++ {
				c, err := x.CorrectChoice(context.Background(), x.Overrides(seed))
				if err != nil {
					t.Fatal(err)
				}
				right[c] = true
			}
			for c := range right {
				out = append(out, choiceGate{"exercise " + x.ID, x.FenceLine, x.Choices[c-1], without(x.Choices, c-1)})
			}
		}
	}
	return out
}

func without(xs []string, i int) []string {
	return append(append([]string{}, xs[:i]...), xs[i+1:]...)
}

// TestNoChoiceGivenAway: no English page states the right choice of a
// question in a sentence above it (words it shares with the right choice
// and not with the others). The Korean pages say the same in Korean,
// whose particles defeat a comparison of words: the English one stands
// for both.
func TestNoChoiceGivenAway(t *testing.T) {
	for _, pg := range labPages(t) {
		p, l := pg.path, pg.lab
		if strings.HasSuffix(p, ".ko.md") {
			continue
		}
		all := sentences(prose(p, string(pg.src)))
		for _, g := range choiceGates(t, l) {
			for _, s := range all {
				if s.line >= g.line {
					break
				}
				if g.states(s.text) {
					t.Errorf("%s:%d: states the right answer to the %s (%q) before it is asked: %q", p, s.line, g.name, g.right, s.text)
				}
			}
		}
	}
}

// TestFirstResultWaits: every lab asks a question before it shows its
// first result: its first block has a prediction.
func TestFirstResultWaits(t *testing.T) {
	for _, pg := range labPages(t) {
		p, l := pg.path, pg.lab
		if len(l.Blocks) > 0 && l.Blocks[0].Predict == nil {
			t.Errorf("%s:%d: block %s, the lab's first result, asks no prediction before it shows it", p, l.Blocks[0].FenceLine, l.Blocks[0].ID)
		}
	}
}

// TestChoiceGiveAwayCaught: a sentence that states the right choice is
// caught, one that names only what every choice shares is not.
func TestChoiceGiveAwayCaught(t *testing.T) {
	g := choiceGate{name: "exercise x", right: "A client idle limit below the server's keep-alive timeout",
		wrong: []string{"A client idle limit above the server's keep-alive timeout", "Turning on `tcp_tw_reuse`"}}
	if !g.states("The rule that removes it is to keep the client's idle limit below the server's keep-alive timeout.") {
		t.Error("a sentence stating the right choice was not caught")
	}
	if g.states("The client and the server each have an idle limit, and a keep-alive timeout decides.") {
		t.Error("a sentence that favours no choice was caught")
	}
}

// labPage is a lab's page as read: its path, source and lab.
type labPage struct {
	path string
	src  []byte
	lab  *Lab
}

// labPages reads every lab page, both languages.
func labPages(t *testing.T) []labPage {
	t.Helper()
	paths, err := filepath.Glob("../../labs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []labPage
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		l, err := Parse(p, src)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, labPage{p, src, l})
	}
	return out
}

// explainLeaks lists the sentences of a page above its explain exercises
// that say a sentence of the exercise's model answer: three quarters or
// more of its content words (six or more of them). The lesson above an
// explain question teaches its ideas, so a sentence may share its terms;
// one that says the model answer's sentence leaves nothing to explain.
func explainLeaks(t *testing.T, file string, src []byte) []string {
	t.Helper()
	l, err := Parse(file, src)
	if err != nil {
		t.Fatal(err)
	}
	xs, err := l.Exercises()
	if err != nil {
		t.Fatal(err)
	}
	all := sentences(prose(file, string(src)))
	var out []string
	for _, x := range xs {
		if x.Kind != KindExplain || x.ModelAnswer == "" {
			continue
		}
		for _, ms := range sentences([]proseLine{{file, x.FenceLine, x.ModelAnswer}}) {
			want := contentWords(ms.text)
			if len(want) < 6 {
				continue
			}
			for _, s := range all {
				if s.line >= x.FenceLine {
					break
				}
				if share(want, contentWords(s.text)) >= 0.75 {
					out = append(out, fmt.Sprintf("%s:%d: says the model answer of exercise %s before it is asked: %q (answer: %q)", file, s.line, x.ID, s.text, ms.text))
				}
			}
		}
	}
	return out
}

// TestNoExplainGivenAway: no English page says a sentence of an explain
// exercise's model answer above the question (the Korean pages translate
// the same text; see TestNoChoiceGivenAway).
func TestNoExplainGivenAway(t *testing.T) {
	for _, pg := range labPages(t) {
		if strings.HasSuffix(pg.path, ".ko.md") {
			continue
		}
		for _, leak := range explainLeaks(t, pg.path, pg.src) {
			t.Error(leak)
		}
	}
}

// TestExplainGiveAwayCaught: a sentence of the PHP pools lab's model
// answer for idle-pause, put in its lead, is caught.
func TestExplainGiveAwayCaught(t *testing.T) {
	const file = "../../labs/php-persistent-pools.md"
	first := ""
	bad := withLead(t, file, func(l *Lab) string {
		xs, err := l.Exercises()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range xs {
			if x.ID == "idle-pause" {
				first = sentences([]proseLine{{file, 1, x.ModelAnswer}})[0].text
			}
		}
		return first
	})
	if got := explainLeaks(t, file, bad); first == "" || len(got) == 0 {
		t.Errorf("a lead that says the model answer (%q) was not caught", first)
	}
}

// withLead returns file's text with a paragraph put first after its front
// matter: lead's sentence for the page as read (a give-away put back, for
// the tests that must catch it).
func withLead(t *testing.T, file string, lead func(*Lab) string) []byte {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Parse(file, src)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(src), "\n+++\n") + len("\n+++\n")
	return []byte(string(src[:i]) + "\n" + lead(l) + "\n" + string(src[i:]))
}
