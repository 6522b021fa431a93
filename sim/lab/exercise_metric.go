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
	var bind func(n node) (node, error)
	bind = func(n node) (node, error) {
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
			l, err := bind(v.l)
			if err != nil {
				return nil, err
			}
			r, err := bind(v.r)
			if err != nil {
				return nil, err
			}
			return binNode{v.op, l, r}, nil
		case numNode:
			return v, nil
		}
		return nil, msgf.Errorf("want a metric or arithmetic on metrics")
	}
	return bind(n)
}

func sortedFields() []string {
	var out []string
	for k := range callFields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// metricVariants lists the variants the metric reads.
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
	return names
}

// Answer computes a number exercise's answer with the model for the given
// overrides (see Overrides).
func (x *Exercise) Answer(ctx context.Context, over []Setting) (float64, error) {
	if x.Kind != "number" {
		return 0, msgf.Errorf("exercise %q is a %s, not a number", x.ID, x.Kind)
	}
	m := Metrics{x.block.ID: {}}
	for _, name := range x.metricVariants() {
		v := x.block.Variant(name)
		s, err := x.block.Scenario(v, over)
		if err != nil {
			return 0, err
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
				return 0, ctx.Err()
			}
			return 0, &Error{File: x.File, Line: x.FenceLine, Msg: msgf.Sprintf("exercise %q: variant %q: %v", x.ID, name, err)}
		}
		if x.Call > 0 {
			if call == nil {
				return 0, &Error{File: x.File, Line: x.Line + x.lines["call"] - 1, Msg: msgf.Sprintf("exercise %q: variant %q makes only %d calls, no call %d", x.ID, name, r.Summary.Calls, x.Call)}
			}
			m[x.block.ID][name] = call
		} else {
			m[x.block.ID][name] = MetricsOf(&VariantResult{Name: name, Summary: &r.Summary})
		}
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
