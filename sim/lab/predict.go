package lab

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// A Predict is the question a page asks before it shows a block's results:
// the reader commits to a number or a choice (or skips), and only then sees
// the charts and the numbers, with the prediction beside the model's
// answer. It is a [predict] table of the ```sim block:
//
//	[predict]
//	question = "With the persistent handle, how many of the ten requests connect?"
//	metric = "persistent.connects"    # an expression of the block's metrics, as in expect
//	unit = "connections"              # number: what the answer counts
//	tolerance = 0                     # number: how close counts as right ("10%" or a number)
//	explain = "Only the first: the handle outlives the request. {answer} connection."
//
// or, for a choice, choices and the value each stands for; the model's
// answer picks the choice whose value is nearest:
//
//	choices = ["about the same", "about twice as fast", "about six times as fast"]
//	values = [1, 2, 6]
//	metric = "share.total_ms.p50 / persistent.total_ms.p50"
//
// The answer is the model's, computed with the block's results (Lab.Run
// fills BlockResult.Predict), never written in the page. A translation
// carries its own question, unit, choices and explain; metric, tolerance
// and values are the same in every language.
type Predict struct {
	Kind         string // "number" or "choice"
	Question     string
	Metric       string
	Unit         string
	Tolerance    float64
	TolerancePct bool
	Choices      []string
	Values       []float64
	Explain      string
	Line         int

	expr node
}

// PredictAnswer is the model's answer to a block's prediction: the metric's
// value, the tolerance in the metric's unit (number), and the 1-based
// choice whose value is nearest (choice).
type PredictAnswer struct {
	Value     float64 `json:"value"`
	Tolerance float64 `json:"tolerance"`
	Choice    int     `json:"choice,omitempty"`
}

// predictKeys are the keys of a [predict] table.
var predictKeys = []string{"question", "metric", "unit", "tolerance", "choices", "values", "explain"}

// Limits of a prediction: like an exercise's.
const maxPredictChoices = 6

// parsePredict reads a block's [predict] table; rel is the line (within
// the block) of the problem.
func parsePredict(v any, lines map[string]int) (p *Predict, rel int, err error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, lines["predict"], errors.New(`predict: want a table ([predict] with question = "…" and metric = "…")`)
	}
	p = &Predict{Line: lines["predict"]}
	at := func(k string) int {
		if l := lines["predict."+k]; l > 0 {
			return l
		}
		return lines["predict"]
	}
	for k := range m {
		if !contains(predictKeys, k) {
			return nil, at(k), fmt.Errorf("predict: unknown key %q (keys: %s)", k, strings.Join(predictKeys, ", "))
		}
	}
	str := func(k string, required bool) (string, error) {
		x, ok := m[k]
		if !ok {
			if required {
				return "", fmt.Errorf("predict: %s is missing", k)
			}
			return "", nil
		}
		s, ok := x.(string)
		if !ok || (required && strings.TrimSpace(s) == "") || len(s) > MaxExerciseText {
			return "", fmt.Errorf("predict: %s: want a non-empty string of at most %d characters", k, MaxExerciseText)
		}
		return s, nil
	}
	for _, f := range []struct {
		key      string
		to       *string
		required bool
	}{{"question", &p.Question, true}, {"metric", &p.Metric, true}, {"unit", &p.Unit, false}, {"explain", &p.Explain, false}} {
		if *f.to, err = str(f.key, f.required); err != nil {
			return nil, at(f.key), err
		}
	}
	if p.expr, err = parseSide(p.Metric); err != nil {
		return nil, at("metric"), fmt.Errorf("predict: metric %q: %v", p.Metric, err)
	}
	_, hasChoices := m["choices"]
	_, hasValues := m["values"]
	_, hasTol := m["tolerance"]
	switch {
	case hasChoices || hasValues:
		p.Kind = "choice"
		if hasTol {
			return nil, at("tolerance"), errors.New("predict: a choice has no tolerance: the nearest value wins")
		}
		cs, _ := m["choices"].([]any)
		vs, _ := m["values"].([]any)
		if len(cs) < 2 || len(cs) > maxPredictChoices || len(vs) != len(cs) {
			return nil, at("choices"), fmt.Errorf("predict: want 2 to %d choices and as many values (the number each choice stands for)", maxPredictChoices)
		}
		for i := range cs {
			s, ok := cs[i].(string)
			if !ok || strings.TrimSpace(s) == "" || len(s) > MaxExerciseText {
				return nil, at("choices"), fmt.Errorf("predict: choices[%d]: want a non-empty string", i)
			}
			f, ok := toFloat64(vs[i])
			if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, at("values"), fmt.Errorf("predict: values[%d]: want a number", i)
			}
			for _, prev := range p.Values {
				if prev == f {
					return nil, at("values"), fmt.Errorf("predict: values[%d] = %v is given twice: the nearest choice would be ambiguous", i, f)
				}
			}
			p.Choices = append(p.Choices, s)
			p.Values = append(p.Values, f)
		}
	default:
		p.Kind = "number"
		if !hasTol {
			return nil, lines["predict"], errors.New(`predict: tolerance is missing: how close counts as right (tolerance = "10%" or a number)`)
		}
		if p.Tolerance, p.TolerancePct, err = parseTolerance(m["tolerance"]); err != nil {
			return nil, at("tolerance"), fmt.Errorf("predict: tolerance: %v", err)
		}
	}
	if strings.Contains(p.Question, "{answer}") {
		return nil, at("question"), errors.New("predict: {answer} may only appear in explain")
	}
	return p, 0, nil
}

// bind resolves the metric's names; a prediction reads only its own block.
func (p *Predict) bind(b *Block, lab *names) error {
	n, err := bindNode(p.expr, b, lab)
	if err != nil {
		return err
	}
	bad := ""
	(&Expect{lhs: n}).walk(func(r refNode) {
		if r.block != b.ID && bad == "" {
			bad = r.raw
		}
	})
	if bad != "" {
		return fmt.Errorf("%q reads another block: a prediction is about its own block's results", bad)
	}
	p.expr = n
	return nil
}

// Answer evaluates the prediction's metric with the block's metrics.
func (p *Predict) Answer(m Metrics) (*PredictAnswer, error) {
	v, err := evalNode(p.expr, m)
	if err != nil {
		return nil, err
	}
	f, ok := v.(float64)
	if !ok {
		return nil, fmt.Errorf("metric %q is %s, not a number", p.Metric, show(v))
	}
	a := &PredictAnswer{Value: f}
	switch p.Kind {
	case "choice":
		best := math.Inf(1)
		for i, x := range p.Values {
			if d := math.Abs(x - f); d < best {
				best, a.Choice = d, i+1
			}
		}
	default:
		a.Tolerance = p.Tolerance
		if p.TolerancePct {
			a.Tolerance = math.Abs(f) * p.Tolerance / 100
		}
	}
	return a, nil
}

// Right reports whether a reader's number is within the answer's tolerance.
func (a *PredictAnswer) Right(x float64) bool {
	return math.Abs(x-a.Value) <= a.Tolerance+1e-9*math.Max(1, math.Abs(a.Value))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
