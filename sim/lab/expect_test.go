package lab

import (
	"strings"
	"testing"
	"time"
)

// within fails the test when f has not returned in d: the defects it
// guards against are loops that never end.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still running after %v", d)
	}
}

// nonASCIIExpects are typos a Korean or German page may hold: a letter
// outside ASCII inside a list, where the parser once looped for ever.
var nonASCIIExpects = []string{
	"base.num_connects == [1, é]",
	"base.num_connects == [가]",
	"base.error contains [ß]",
	"base.connects ≈ [Ω] ±1%",
	"[é] == [1]",
	"base.connects == é",
	"(가 + 1) == 2",
}

// TestExpectNonASCII: each is an error naming the file and the line of the
// expectation, in a ```sim block and in an ```exercise block, at once.
func TestExpectNonASCII(t *testing.T) {
	for _, e := range nonASCIIExpects {
		t.Run(e, func(t *testing.T) {
			q := strings.ReplaceAll(e, `"`, `\"`)
			within(t, 10*time.Second, func() {
				src := "+++\ntitle = \"T\"\n+++\n\n```sim {id=\"b\"}\nrequests = 1\n\nexpect = [\"" + q + "\"]\n```\n"
				_, err := Parse("typo.md", []byte(src))
				if err == nil || !strings.Contains(err.Error(), "typo.md:8:") || !strings.Contains(err.Error(), "unexpected") {
					t.Errorf("sim block: %v", err)
				}
			})
			within(t, 10*time.Second, func() {
				src := exLab("kind = \"number\"\nquestion = \"Q?\"\nblock = \"b\"\nvariant = \"kept\"\nmetric = \"connects\"\ntolerance = 0\nexpect = [\"" + q + "\"]")
				l, err := Parse("typo.md", []byte(src))
				if err != nil {
					t.Fatal(err)
				}
				_, err = l.Exercises()
				if err == nil || !strings.Contains(err.Error(), "typo.md:30:") || !strings.Contains(err.Error(), "unexpected") {
					t.Errorf("exercise block: %v", err)
				}
			})
		})
	}
	// The metric of a number exercise goes through the same parser.
	within(t, 10*time.Second, func() {
		l, err := Parse("typo.md", []byte(exLab("kind = \"number\"\nquestion = \"Q?\"\nblock = \"b\"\nvariant = \"kept\"\nmetric = \"[connects, é]\"\ntolerance = 0")))
		if err != nil {
			t.Fatal(err)
		}
		if _, err = l.Exercises(); err == nil || !strings.Contains(err.Error(), "typo.md:28:") {
			t.Errorf("metric: %v", err)
		}
	})
}

// TestExpectParserEnds: every input the parser is given ends in a result or
// an error, including lists without commas, unclosed lists, deep nesting and
// over-long text.
func TestExpectParserEnds(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"[1 2] == [1, 2]", "want , or ]"},
		{"[1, 2 == [1, 2]", ""},
		{"[1, == 1", "missing value"},
		{"1 == [1, 2", "missing ]"},
		{strings.Repeat("(", 40) + "1" + strings.Repeat(")", 40) + " == 1", "nested more than 32"},
		{strings.Repeat("[", 40) + "1" + strings.Repeat("]", 40) + " == 1", "nested more than 32"},
		{"1 == " + strings.Repeat("1 + ", 300) + "1", "longer than 1000 bytes"},
		{"connects == ¹", "unexpected"},
	} {
		within(t, 10*time.Second, func() {
			_, err := parseExpect(c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%.60s: %v, want an error with %q", c.in, err, c.want)
			}
		})
	}
	// Still accepted: a trailing comma, and nesting up to the limit.
	for _, ok := range []string{"[1, 2,] == [1, 2]", strings.Repeat("(", 31) + "1" + strings.Repeat(")", 31) + " == 1"} {
		if _, err := parseExpect(ok); err != nil {
			t.Errorf("%.60s: %v", ok, err)
		}
	}
}
