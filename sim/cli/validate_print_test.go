package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim/harness"
)

// TestValidationVerdictLine: the last line of sim validate's output says
// which variants were inconclusive and why there is nothing to conclude,
// which disagree, and which ran on the Go stand-in for PHP 8.5 rather
// than on PHP; the exit status follows the verdict.
func TestValidationVerdictLine(t *testing.T) {
	standIn := map[string]string{"name": harness.StandInNote + ": Go net/http", "stand_in": "Node.js's PHP runtime is not installed (make php)"}
	agree := &harness.VariantComparison{Name: "a", OK: true, Verdict: harness.VerdictAgree, Runtime: standIn}
	unsure := &harness.VariantComparison{Name: "b", Verdict: harness.VerdictInconclusive,
		Inconclusive: "machine busy: other programs used 1.80 CPUs on average during the run"}
	bad := &harness.VariantComparison{Name: "c", Verdict: harness.VerdictDisagree, Why: "connects 2, model 1: a count compared exactly does not depend on how busy the machine was"}
	cases := []struct {
		name     string
		variants []*harness.VariantComparison
		verdict  string
		says     []string
	}{
		{"stand-in", []*harness.VariantComparison{agree}, harness.VerdictAgree,
			[]string{"all 1 variants run for real agree", "1 of them ran on the " + harness.StandInNote + " instead of PHP itself (Node.js's PHP runtime is not installed (make php)): x/a"}},
		{"inconclusive", []*harness.VariantComparison{agree, unsure}, harness.VerdictInconclusive,
			[]string{"verdict: inconclusive: 1 of 2 variants could not be measured, the machine was busy: x/b; the other 1 agree", "INCONCLUSIVE: machine busy: other programs used 1.80 CPUs"}},
		{"disagree", []*harness.VariantComparison{unsure, bad}, harness.VerdictDisagree,
			[]string{"verdict: 1 of 2 variants outside tolerance: x/c; 1 inconclusive, the machine was busy: x/b", "not the machine's doing: connects 2, model 1"}},
	}
	for _, c := range cases {
		out := &ValidateOutput{Lab: "L", File: "labs/l.md", Machine: map[string]string{},
			Blocks: []*harness.BlockValidation{{ID: "x", Variants: c.variants}}}
		if got := out.verdict(true); got != c.verdict {
			t.Errorf("%s: verdict %s, want %s", c.name, got, c.verdict)
		}
		var b bytes.Buffer
		printValidation(&b, out)
		for _, s := range c.says {
			if !strings.Contains(b.String(), s) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, s, b.String())
			}
		}
	}
	// A real_expect statement that does not hold disagrees, whatever the
	// variants say.
	out := &ValidateOutput{Blocks: []*harness.BlockValidation{{ID: "x", Variants: []*harness.VariantComparison{unsure}}}}
	if got := out.verdict(false); got != harness.VerdictDisagree {
		t.Errorf("with a statement that does not hold: %s", got)
	}
}

// TestValidationOneCallFootnote: a phase row whose tolerance holds one
// call's measured variation is marked, and a footnote says how much and
// why.
func TestValidationOneCallFootnote(t *testing.T) {
	v := &harness.VariantComparison{Name: "a", OK: true, Verdict: harness.VerdictAgree, Phases: []harness.PhaseRow{
		{Phase: "total, new conn", ModelMS: 62, MeasuredMS: 65, ToleranceMS: 4.6, OneCallMS: 1.5, OK: true},
		{Phase: "total, reused", ModelMS: 7.8, MeasuredMS: 7.8, ToleranceMS: 0.5, OK: true}}}
	out := &ValidateOutput{Lab: "L", File: "labs/l.md", Machine: map[string]string{},
		Blocks: []*harness.BlockValidation{{ID: "x", Variants: []*harness.VariantComparison{v}}}}
	var b bytes.Buffer
	printValidation(&b, out)
	for _, s := range []string{"±4.600†", "† one or two calls: no median averages their variation away, so the tolerance allows 1.500 ms more"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, b.String())
		}
	}
	if strings.Contains(b.String(), "±0.500†") {
		t.Errorf("a row without the allowance is marked:\n%s", b.String())
	}
}
