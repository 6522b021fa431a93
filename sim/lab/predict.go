package lab

import (
	"math"

	"github.com/connlab/connlab/sim/internal/msgf"
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
	Kind         string    `json:"kind"` // "number" or "choice"
	Question     string    `json:"question"`
	Metric       string    `json:"metric"`
	Unit         string    `json:"unit,omitempty"`
	Tolerance    float64   `json:"tolerance,omitempty"`
	TolerancePct bool      `json:"tolerance_pct,omitempty"`
	Choices      []string  `json:"choices,omitempty"`
	Values       []float64 `json:"values,omitempty"`
	Explain      string    `json:"explain,omitempty"`
	Line         int       `json:"line"`

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

// bind resolves the metric's names; a prediction reads only its own block.
func (p *Predict) bind(b *Block, lab *names) error {
	n, err := bindNode(p.expr, b, lab, false)
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
		return msgf.Errorf("%q reads another block: a prediction is about its own block's results", bad)
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
		return nil, msgf.Errorf("metric %q is %s, not a number", p.Metric, show(v))
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
