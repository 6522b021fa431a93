package lab

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/connlab/connlab/sim"
)

// RunOptions control how a block runs.
type RunOptions struct {
	Seed uint64
	// Set overrides scenario keys in every variant (sim run --set).
	Set []Setting
	// Sink, if set, receives every event of every variant of every block
	// that runs.
	Sink func(block, variant string, e *sim.Event)
}

// VariantResult is one variant's outcome. Error is set, and Summary nil,
// when the variant's scenario is rejected the way the lesson expects (PHP's
// ValueError for a COOKIE share option, say).
type VariantResult struct {
	Name     string        `json:"name"`
	Label    string        `json:"label,omitempty"`
	Summary  *sim.Summary  `json:"summary,omitempty"`
	Error    string        `json:"error,omitempty"`
	Scenario *sim.Scenario `json:"-"`
	Series   *sim.Series   `json:"-"`
}

// BlockResult is the outcome of one block: every variant and every
// expectation checked against them.
type BlockResult struct {
	ID       string           `json:"id"`
	Title    string           `json:"title,omitempty"`
	Variants []*VariantResult `json:"variants"`
	Checks   []Check          `json:"checks"`
}

// OK reports whether every expectation held.
func (r *BlockResult) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// Scenarios builds and validates every variant's scenario. A variant whose
// scenario is invalid is an error unless an expectation of the block reads
// that variant's error; then its message is returned in errs.
func (b *Block) Scenarios(set []Setting) (scns []*sim.Scenario, errs []error, err error) {
	for _, v := range b.Variants {
		s, err := b.Scenario(v, set)
		if err != nil {
			return nil, nil, err
		}
		if verr := s.Validate(); verr != nil {
			if b.expectsError(v.Name) {
				scns, errs = append(scns, nil), append(errs, verr)
				continue
			}
			return nil, nil, b.validationError(v, verr)
		}
		scns, errs = append(scns, &s), append(errs, nil)
	}
	return scns, errs, nil
}

func (b *Block) expectsError(variant string) bool {
	for _, x := range b.Expects {
		if x.refersToError(b.ID, variant) {
			return true
		}
	}
	return false
}

func (b *Block) validationError(v *Variant, err error) error {
	line := v.Line
	var pe *sim.ParamError
	if errors.As(err, &pe) {
		if l := b.lineOfKey(v, pe.Key); l > 0 {
			line = l
		}
	}
	if line == 0 {
		line = b.Line
	}
	msg := err.Error()
	if len(b.Variants) > 1 || v.Name != "base" {
		msg = "variant \"" + v.Name + "\": " + msg
	}
	return &Error{File: b.File, Line: line, Block: b.ID, Msg: msg}
}

// RunVariants simulates every variant of the block. Its Checks are left
// empty: expectations may read other blocks, so Lab.Run checks them.
func (b *Block) RunVariants(ctx context.Context, opt RunOptions) (*BlockResult, error) {
	scns, errs, err := b.Scenarios(opt.Set)
	if err != nil {
		return nil, err
	}
	res := &BlockResult{ID: b.ID, Title: b.Title, Checks: []Check{}}
	for i, v := range b.Variants {
		vr := &VariantResult{Name: v.Name, Label: v.Label, Scenario: scns[i]}
		res.Variants = append(res.Variants, vr)
		if errs[i] != nil {
			vr.Error = errs[i].Error()
			continue
		}
		var sink func(*sim.Event)
		if opt.Sink != nil {
			id, name := b.ID, v.Name
			sink = func(e *sim.Event) { opt.Sink(id, name, e) }
		}
		r, err := sim.Run(ctx, *scns[i], sim.Options{Seed: opt.Seed, Sink: sink})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, b.validationError(v, err)
		}
		vr.Summary, vr.Series = &r.Summary, &r.Series
	}
	return res, nil
}

// Needs lists the blocks whose results b's expectations read, b first.
func (b *Block) Needs() []string {
	ids := []string{b.ID}
	for _, x := range b.Expects {
		for _, id := range x.blocks() {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// Check evaluates b's expectations against block results by id (from the
// model or from a real run).
func (b *Block) Check(results map[string]*BlockResult) []Check {
	m := Metrics{}
	for id, r := range results {
		m[id] = map[string]map[string]any{}
		for _, v := range r.Variants {
			m[id][v.Name] = MetricsOf(v)
		}
	}
	checks := make([]Check, 0, len(b.Expects))
	for _, x := range b.Expects {
		checks = append(checks, x.eval(m))
	}
	return checks
}

// Run simulates the given blocks (every block if ids is empty), and the
// blocks their expectations read, then checks the expectations. Only the
// blocks asked for are returned, in the lab's order. Sink sees every block
// that runs.
func (l *Lab) Run(ctx context.Context, ids []string, opt RunOptions) ([]*BlockResult, error) {
	want := ids
	if len(want) == 0 {
		for _, b := range l.Blocks {
			want = append(want, b.ID)
		}
	}
	var need []*Block
	for _, id := range want {
		b, err := l.Block(id)
		if err != nil {
			return nil, err
		}
		for _, dep := range b.Needs() {
			d, _ := l.Block(dep)
			if !slices.Contains(need, d) {
				need = append(need, d)
			}
		}
	}
	// Check every scenario before running any, so bad input never leaves a
	// half-written result.
	for _, b := range need {
		if _, _, err := b.Scenarios(opt.Set); err != nil {
			return nil, err
		}
	}
	results := map[string]*BlockResult{}
	for _, b := range need {
		r, err := b.RunVariants(ctx, opt)
		if err != nil {
			return nil, err
		}
		results[b.ID] = r
	}
	var out []*BlockResult
	for _, b := range l.Blocks {
		if slices.Contains(want, b.ID) {
			r := results[b.ID]
			r.Checks = b.Check(results)
			out = append(out, r)
		}
	}
	return out, nil
}

// MetricsOf returns a variant's values by the names expectations use.
func MetricsOf(v *VariantResult) map[string]any {
	out := map[string]any{}
	if v.Summary != nil {
		raw, _ := json.Marshal(v.Summary)
		_ = json.Unmarshal(raw, &out)
	}
	if v.Error != "" {
		out["error"] = v.Error
	} else {
		out["error"] = nil
	}
	return out
}

var metricNames = func() map[string]bool {
	names := jsonNames(sim.Summary{})
	names["error"] = true
	return names
}()

func knownMetric(path []string) bool {
	return metricNames[strings.Join(path, ".")] || knownChainMetric(path)
}
