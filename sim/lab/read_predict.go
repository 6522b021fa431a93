//go:build !nolabparse

package lab

// Reading a block's [predict] table. Not in a nolabparse build.

import (
	"errors"
	"math"
	"strings"

	"github.com/connlab/connlab/sim/internal/msgf"
)

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
			return nil, at(k), msgf.Errorf("predict: unknown key %q (keys: %s)", k, strings.Join(predictKeys, ", "))
		}
	}
	str := func(k string, required bool) (string, error) {
		x, ok := m[k]
		if !ok {
			if required {
				return "", msgf.Errorf("predict: %s is missing", k)
			}
			return "", nil
		}
		s, ok := x.(string)
		if !ok || (required && strings.TrimSpace(s) == "") || len(s) > MaxExerciseText {
			return "", msgf.Errorf("predict: %s: want a non-empty string of at most %d characters", k, MaxExerciseText)
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
		return nil, at("metric"), msgf.Errorf("predict: metric %q: %v", p.Metric, err)
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
			return nil, at("choices"), msgf.Errorf("predict: want 2 to %d choices and as many values (the number each choice stands for)", maxPredictChoices)
		}
		for i := range cs {
			s, ok := cs[i].(string)
			if !ok || strings.TrimSpace(s) == "" || len(s) > MaxExerciseText {
				return nil, at("choices"), msgf.Errorf("predict: choices[%d]: want a non-empty string", i)
			}
			f, ok := toFloat64(vs[i])
			if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, at("values"), msgf.Errorf("predict: values[%d]: want a number", i)
			}
			for _, prev := range p.Values {
				if prev == f {
					return nil, at("values"), msgf.Errorf("predict: values[%d] = %v is given twice: the nearest choice would be ambiguous", i, f)
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
			return nil, at("tolerance"), msgf.Errorf("predict: tolerance: %v", err)
		}
	}
	if strings.Contains(p.Question, "{answer}") {
		return nil, at("question"), errors.New("predict: {answer} may only appear in explain")
	}
	return p, 0, nil
}
