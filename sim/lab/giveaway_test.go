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
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lead := "\nA client that opens about 470 new connections a second runs out.\n"
	i := strings.Index(string(src), "\n+++\n") + len("\n+++\n")
	bad := string(src[:i]) + lead + string(src[i:])
	got := strings.Join(giveAways(t, file, []byte(bad), nil), "\n")
	if !strings.Contains(got, `"470"`) {
		t.Errorf("a lead that gives the answer away was not caught:\n%s", got)
	}
}

// TestFirstResultWaits: every lab asks a question before it shows its
// first result: its first block has a prediction.
func TestFirstResultWaits(t *testing.T) {
	pages, err := filepath.Glob("../../labs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		l, err := Parse(p, src)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Blocks) > 0 && l.Blocks[0].Predict == nil {
			t.Errorf("%s:%d: block %s, the lab's first result, asks no prediction before it shows it", p, l.Blocks[0].FenceLine, l.Blocks[0].ID)
		}
	}
}
