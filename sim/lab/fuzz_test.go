package lab

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The fuzz targets' seed corpora are in testdata/fuzz/; `go test` runs
// them and `make fuzz` searches from them. They hold the inputs that once
// made the reader loop for ever or run for minutes.

// slowInput crashes the fuzzing process, which saves the input, when one
// input has taken longer than d: a hang is a bug like a panic.
func slowInput(d time.Duration) (stop func() bool) {
	return time.AfterFunc(d, func() { panic(fmt.Sprintf("one input took longer than %v", d)) }).Stop
}

// FuzzParse reads arbitrary Markdown as a lab, its ```sim blocks with their
// expectations and its ```exercise blocks: it ends, and a bad input is an
// error naming the file.
func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(exLab("kind = \"number\"\nquestion = \"Q?\"\nblock = \"b\"\nvariant = \"kept\"\nmetric = \"kept.total_ms.p50 - new.total_ms.p50\"\ntolerance = \"10%\"\nexpect = [\"answer > 0\"]")))
	f.Add([]byte("```sim {id=\"a\"}\nexpect = [\"(1 + [2]) ≈ 3 ±1\"]\n```"))
	f.Fuzz(func(t *testing.T, src []byte) {
		defer slowInput(20 * time.Second)()
		named := func(err error) {
			if err != nil && !strings.HasPrefix(err.Error(), "fuzz.md") {
				t.Fatalf("error without the file's name: %v", err)
			}
		}
		l, err := Parse("fuzz.md", src)
		named(err)
		if err != nil {
			return
		}
		for _, b := range l.Blocks {
			_, _, err := b.Scenarios(nil)
			named(err)
			b.Needs()
		}
		_, err = l.Exercises()
		named(err)
	})
}

// FuzzExpect parses arbitrary expectations and metric expressions, binds
// them to a block and evaluates them: each ends in a value or an error.
func FuzzExpect(f *testing.F) {
	for _, s := range []string{"a.connects == 3", "a.total_ms.p50 ≈ 93 ±10%", "b.num_connects[0] - a.num_connects[0] >= 1", "a.error contains \"x\""} {
		f.Add(s)
	}
	blk := &Block{ID: "blk", Variants: []*Variant{{Name: "a"}, {Name: "b"}}}
	lab := newNames([]*Block{blk})
	m := Metrics{"blk": {
		"a": {"connects": 3.0, "num_connects": []any{1.0, 0.0}, "total_ms": map[string]any{"p50": 93.0}, "error": "ValueError"},
		"b": {"connects": 0.0, "num_connects": []any{}, "error": nil},
	}}
	f.Fuzz(func(t *testing.T, s string) {
		defer slowInput(20 * time.Second)()
		if _, err := parseSide(s); err != nil && err.Error() == "" {
			t.Fatal("an error without a message")
		}
		x, err := parseExpect(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if x.bind(blk, lab) == nil {
			x.eval(m)
			x.blocks()
		}
	})
}
