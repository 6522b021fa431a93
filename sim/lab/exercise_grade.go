package lab

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/connlab/connlab/sim/internal/msgf"
)

// Grading: checking a student's answer against an instance, and the
// expectations an exercise states about its answer.

// answerNode stands for the exercise's answer in its expectations.
type answerNode struct{}

func markAnswer(n node) node {
	switch v := n.(type) {
	case refNode:
		if v.raw == "answer" {
			return answerNode{}
		}
	case binNode:
		return binNode{v.op, markAnswer(v.l), markAnswer(v.r)}
	case listNode:
		out := make(listNode, len(v))
		for i, e := range v {
			out[i] = markAnswer(e)
		}
		return out
	}
	return n
}

func fillAnswer(n node, answer node) node {
	switch v := n.(type) {
	case answerNode:
		return answer
	case binNode:
		return binNode{v.op, fillAnswer(v.l, answer), fillAnswer(v.r, answer)}
	case listNode:
		out := make(listNode, len(v))
		for i, e := range v {
			out[i] = fillAnswer(e, answer)
		}
		return out
	}
	return n
}

// CheckExpects evaluates the exercise's expectations against its unseeded
// instance and the lab's results (block id → result, as Lab.Run gives).
func (x *Exercise) CheckExpects(in *Instance, results map[string]*BlockResult) []Check {
	m := Metrics{}
	for _, id := range x.ExpectBlocks() {
		if r := results[id]; r != nil {
			m[id] = blockMetrics(r)
		}
	}
	var ans node
	switch a := in.Answer.(type) {
	case float64:
		ans = numNode(a)
	case string:
		ans = strNode(a)
	}
	var out []Check
	for _, e := range x.Expects {
		cp := *e
		cp.lhs, cp.rhs = fillAnswer(e.lhs, ans), fillAnswer(e.rhs, ans)
		out = append(out, cp.eval(m))
	}
	return out
}

// ExpectBlocks lists the blocks the exercise's expectations read.
func (x *Exercise) ExpectBlocks() []string {
	var ids []string
	for _, e := range x.Expects {
		for _, id := range e.blocks() {
			if id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// A Verdict is the outcome of one try.
type Verdict struct {
	OK bool `json:"ok"`
	// Direction is "high" or "low" for a wrong number.
	Direction string  `json:"direction,omitempty"`
	Value     float64 `json:"value,omitempty"`
	Choice    int     `json:"choice,omitempty"`
	// Points says, for an explanation with a rubric, which key points it
	// names (OK: at least the rubric's pass of them).
	Points []bool `json:"points,omitempty"`
}

// Check judges one answer as a student typed it: a number (units and
// thousands separators allowed) within the tolerance, or the number of a
// choice as shown. An explanation is right when it names enough of the
// rubric's key points (any non-empty text without a rubric). An
// error means the input is not an answer at all (and says what is wanted).
func (in *Instance) Check(input string) (Verdict, error) {
	input = strings.TrimSpace(input)
	switch in.Kind {
	case "number":
		f, err := ParseNumber(input, in.Unit)
		if err != nil {
			return Verdict{}, err
		}
		a := in.Answer.(float64)
		v := Verdict{Value: f, OK: math.Abs(f-a) <= *in.Tolerance+1e-9*math.Max(1, math.Abs(a))}
		if !v.OK {
			v.Direction = "low"
			if f > a {
				v.Direction = "high"
			}
		}
		return v, nil
	case "choice":
		s := strings.TrimSuffix(strings.TrimSpace(input), ")")
		n, err := strconv.Atoi(s)
		if err != nil && len(s) == 1 && s[0] >= 'a' && s[0] <= 'a'+byte(len(in.Choices))-1 {
			n, err = int(s[0]-'a')+1, nil
		}
		if err != nil || n < 1 || n > len(in.Choices) {
			return Verdict{}, msgf.Errorf("want the number of a choice, 1 to %d", len(in.Choices))
		}
		return Verdict{OK: n == in.Correct, Choice: n}, nil
	default:
		if input == "" {
			return Verdict{}, msgf.Errorf("write your explanation first")
		}
		if len(in.Rubric) == 0 {
			return Verdict{OK: true}, nil
		}
		v := Verdict{Points: GradeRubric(input, in.Rubric)}
		n := 0
		for _, ok := range v.Points {
			if ok {
				n++
			}
		}
		v.OK = n >= in.Pass
		return v, nil
	}
}

// ParseNumber reads a student's number: "22", "22.5", "22 ms", "~22",
// "28,232", "1_000". The unit, if written, must be the exercise's.
func ParseNumber(s, unit string) (float64, error) {
	t := strings.TrimSpace(s)
	for _, p := range []string{"≈", "~", "약"} {
		t = strings.TrimSpace(strings.TrimPrefix(t, p))
	}
	if unit != "" {
		t = strings.TrimSpace(strings.TrimSuffix(t, unit))
	}
	t = strings.ReplaceAll(t, "_", "")
	if thousands(t) {
		t = strings.ReplaceAll(t, ",", "")
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !decimal(t) || math.IsInf(f, 0) {
		want := "a number"
		if unit != "" {
			want += " (in " + unit + ")"
		}
		return 0, msgf.Errorf("want %s, got %q", want, s)
	}
	return f, nil
}

// decimal reports whether s is a decimal number as the page reads one
// (assets/ts/sim/helpers.ts): [-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?, so
// not ParseFloat's hexadecimal, Inf or NaN.
func decimal(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	if whole == "" && frac == "" || !allDigits(whole) || !allDigits(frac) {
		return false
	}
	if hasExp {
		if exp != "" && (exp[0] == '-' || exp[0] == '+') {
			exp = exp[1:]
		}
		return exp != "" && allDigits(exp)
	}
	return true
}

// thousands reports whether s is a number with commas between groups of
// three digits: -?\d{1,3}(,\d{3})+(\.\d+)?
func thousands(s string) bool {
	s = strings.TrimPrefix(s, "-")
	int, frac, hasFrac := strings.Cut(s, ".")
	groups := strings.Split(int, ",")
	if len(groups) < 2 || len(groups[0]) < 1 || len(groups[0]) > 3 || !allDigits(groups[0]) {
		return false
	}
	for _, g := range groups[1:] {
		if len(g) != 3 || !allDigits(g) {
			return false
		}
	}
	return !hasFrac || (frac != "" && allDigits(frac))
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FormatNumber prints an answer with about three significant digits:
// 22, 92.9, 47.1, 0.35, 28232.
func FormatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	a := math.Abs(f)
	dec := 0
	if a > 0 {
		dec = 2 - int(math.Floor(math.Log10(a)))
	}
	dec = min(max(dec, 0), 6)
	out := strconv.FormatFloat(f, 'f', dec, 64)
	if strings.Contains(out, ".") {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	return out
}
