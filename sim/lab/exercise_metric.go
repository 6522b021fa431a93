package lab

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim"
)

// An exercise's metric: binding its names to the variants of its block,
// and computing a number exercise's answer with the model.

// callFields are the metrics of one call (call = N): every phase of sim's
// table, and the call's connection.
var callFields = func() map[string]bool {
	m := map[string]bool{"num_connects": true, "worker": true, "conn": true}
	for _, p := range sim.Phases() {
		m[p.JSON] = true
	}
	return m
}()

// callMetrics are the metrics of one call event.
func callMetrics(e *sim.Event) map[string]any {
	m := map[string]any{"num_connects": float64(e.NumConnects()), "worker": float64(e.Worker), "conn": float64(e.Conn)}
	for _, p := range sim.Phases() {
		m[p.JSON] = sim.MS(p.Time(e))
	}
	return m
}

// bindMetric parses the metric expression and resolves its names: a first
// name that is a variant of the block selects that variant; otherwise the
// name is a metric of the exercise's variant.
func (x *Exercise) bindMetric(s string) (node, error) {
	if x.block == nil {
		return nil, msgf.Errorf("needs a block")
	}
	n, err := parseSide(s)
	if err != nil {
		return nil, err
	}
	return x.bindRefs(n, false)
}

// bindRefs resolves the names of an expression as bindMetric does; strOK
// lets it hold text ("…"), as an expectation may.
func (x *Exercise) bindRefs(n node, strOK bool) (node, error) {
	switch v := n.(type) {
	case refNode:
		v.block = x.block.ID
		if len(v.path) > 1 && x.block.Variant(v.path[0]) != nil {
			v.variant, v.path = v.path[0], v.path[1:]
		} else if x.Variant != "" {
			v.variant = x.Variant
		} else {
			return nil, msgf.Errorf("block %q has several variants (%s): set variant = \"…\" or write variant.%s", x.block.ID, variantNames(x.block), v.raw)
		}
		if x.Call > 0 {
			if len(v.path) == 2 && callFields[v.path[0]] && strings.HasSuffix(v.path[0], "_ms") {
				v.path = v.path[:1] // total_ms.p50 of one call is the call's total_ms
			}
			if len(v.path) != 1 || !callFields[v.path[0]] || v.index >= 0 {
				return nil, msgf.Errorf("with call = %d, name a field of that call (%s)", x.Call, strings.Join(sortedFields(), ", "))
			}
		} else if !knownMetric(v.path) {
			return nil, msgf.Errorf("no metric %q (see sim run --json for the names)", strings.Join(v.path, "."))
		}
		return v, nil
	case binNode:
		l, err := x.bindRefs(v.l, strOK)
		if err != nil {
			return nil, err
		}
		r, err := x.bindRefs(v.r, strOK)
		if err != nil {
			return nil, err
		}
		return binNode{v.op, l, r}, nil
	case numNode:
		return v, nil
	case strNode:
		if strOK {
			return v, nil
		}
	}
	return nil, msgf.Errorf("want a metric or arithmetic on metrics")
}

// bindCorrectWhen parses a computed choice's expectations, one per choice
// ("" for a choice never right), with the names of the exercise's block.
// At least two choices must be able to be right, or nothing is computed.
func (x *Exercise) bindCorrectWhen(texts []string) ([]string, []*Expect, error) {
	out := make([]*Expect, len(texts))
	n := 0
	for i, s := range texts {
		if strings.TrimSpace(s) == "" {
			continue
		}
		e, err := parseExpect(s)
		if err == nil {
			if e.lhs, err = x.bindRefs(e.lhs, true); err == nil {
				e.rhs, err = x.bindRefs(e.rhs, true)
			}
		}
		if err != nil {
			return nil, nil, msgf.Errorf("correct_when[%d] %q: %v", i, s, err)
		}
		out[i] = e
		n++
	}
	if n < 2 {
		return nil, nil, msgf.Errorf("correct_when: want an expectation for at least 2 choices (else write correct = N)")
	}
	return texts, out, nil
}

func sortedFields() []string {
	var out []string
	for k := range callFields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// metricVariants lists the variants the metric, or a computed choice's
// expectations, read.
func (x *Exercise) metricVariants() []string {
	var names []string
	var walk func(n node)
	walk = func(n node) {
		switch v := n.(type) {
		case refNode:
			if !slices.Contains(names, v.variant) {
				names = append(names, v.variant)
			}
		case binNode:
			walk(v.l)
			walk(v.r)
		}
	}
	walk(x.metric)
	for _, e := range x.correctWhen {
		if e != nil {
			walk(e.lhs)
			walk(e.rhs)
		}
	}
	return names
}

// Answer computes a number exercise's answer with the model for the given
// overrides (see Overrides).
func (x *Exercise) Answer(ctx context.Context, over []Setting) (float64, error) {
	if x.Kind != "number" {
		return 0, msgf.Errorf("exercise %q is a %s, not a number", x.ID, x.Kind)
	}
	m, err := x.runMetrics(ctx, over)
	if err != nil {
		return 0, err
	}
	v, err := evalNode(x.metric, m)
	if err != nil {
		return 0, &Error{File: x.File, Line: x.Line + x.lines["metric"] - 1, Msg: msgf.Sprintf("exercise %q: metric %q: %v", x.ID, x.Metric, err)}
	}
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, &Error{File: x.File, Line: x.Line + x.lines["metric"] - 1, Msg: msgf.Sprintf("exercise %q: metric %q gives %s, not a number, in this scenario", x.ID, x.Metric, show(v))}
	}
	return math.Round(f*1e6) / 1e6, nil
}

// Computed reports whether the exercise's right choice is computed by the
// model (correct_when).
func (x *Exercise) Computed() bool { return len(x.correctWhen) > 0 }

// CorrectChoice computes a computed choice's right choice (1-based, in the
// lab's order) with the model for the given overrides: the one choice whose
// expectation holds. None or several holding is an error at correct_when's
// line that names the scenario.
func (x *Exercise) CorrectChoice(ctx context.Context, over []Setting) (int, error) {
	if !x.Computed() {
		return x.Correct, nil
	}
	m, err := x.runMetrics(ctx, over)
	if err != nil {
		return 0, err
	}
	var held []int
	for i, e := range x.correctWhen {
		if e == nil {
			continue
		}
		c := e.eval(m)
		if !c.OK && c.Want == "" { // the expression could not be evaluated
			return 0, x.whenError(over, msgf.Sprintf("correct_when[%d] %q: %s", i, e.Text, c.Got))
		}
		if c.OK {
			held = append(held, i+1)
		}
	}
	if len(held) != 1 {
		return 0, x.whenError(over, msgf.Sprintf("correct_when: want exactly one choice right, got %d (%v)", len(held), held))
	}
	return held[0], nil
}

func (x *Exercise) whenError(over []Setting, msg string) error {
	ln := x.FenceLine
	if rel := x.lines["correct_when"]; rel > 0 {
		ln = x.Line + rel - 1
	}
	if s := settingsText(over); s != "" {
		msg += " with " + s
	}
	return &Error{File: x.File, Line: ln, Msg: msgf.Sprintf("exercise %q: %s", x.ID, msg)}
}

// settingsText is overrides as key=value words.
func settingsText(over []Setting) string {
	parts := make([]string, len(over))
	for i, st := range over {
		parts[i] = st.Key + "=" + formatSetting(st)
	}
	return strings.Join(parts, " ")
}

// runMetrics runs, with the model, each variant the exercise reads under
// the given overrides, and gives their metrics (the Nth call's, with call).
func (x *Exercise) runMetrics(ctx context.Context, over []Setting) (Metrics, error) {
	m := Metrics{x.block.ID: {}}
	for _, name := range x.metricVariants() {
		v := x.block.Variant(name)
		s, err := x.block.Scenario(v, over)
		if err != nil {
			return nil, err
		}
		var call map[string]any
		var sink func(*sim.Event)
		if x.Call > 0 {
			n := 0
			sink = func(e *sim.Event) {
				if e.Kind != sim.KindCall {
					return
				}
				n++
				if n == x.Call {
					call = callMetrics(e)
				}
			}
		}
		r, err := sim.Run(ctx, s, sim.Options{Seed: 1, Sink: sink})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &Error{File: x.File, Line: x.FenceLine, Msg: msgf.Sprintf("exercise %q: variant %q: %v", x.ID, name, err)}
		}
		if x.Call > 0 {
			if call == nil {
				return nil, &Error{File: x.File, Line: x.Line + x.lines["call"] - 1, Msg: msgf.Sprintf("exercise %q: variant %q makes only %d calls, no call %d", x.ID, name, r.Summary.Calls, x.Call)}
			}
			m[x.block.ID][name] = call
		} else {
			m[x.block.ID][name] = MetricsOf(&VariantResult{Name: name, Summary: &r.Summary})
		}
	}
	return m, nil
}
