package lab

import (
	"encoding/json"
	"os"
	"testing"
)

// The cases of ../testdata/helpers.json that package lab answers: a
// student's number (ParseNumber) and a command's word (ShellQuote). The
// page's TypeScript answers the same (site/helpers_ts_test.go).
func TestHelperCases(t *testing.T) {
	raw, err := os.ReadFile("../testdata/helpers.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		ParseNumber []struct {
			Input string   `json:"input"`
			Unit  string   `json:"unit"`
			Value *float64 `json:"value"`
		} `json:"parse_number"`
		ShellQuote []struct{ In, Out string } `json:"shell_quote"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.ParseNumber) < 10 || len(c.ShellQuote) < 10 {
		t.Fatalf("%d number and %d quoting cases", len(c.ParseNumber), len(c.ShellQuote))
	}
	for _, x := range c.ParseNumber {
		f, err := ParseNumber(x.Input, x.Unit)
		switch {
		case x.Value == nil && err == nil:
			t.Errorf("ParseNumber(%q, %q) = %v, want an error", x.Input, x.Unit, f)
		case x.Value != nil && (err != nil || f != *x.Value):
			t.Errorf("ParseNumber(%q, %q) = %v, %v; want %v", x.Input, x.Unit, f, err, *x.Value)
		}
	}
	for _, x := range c.ShellQuote {
		if got := ShellQuote(x.In); got != x.Out {
			t.Errorf("ShellQuote(%q) = %s, want %s", x.In, got, x.Out)
		}
	}
}
