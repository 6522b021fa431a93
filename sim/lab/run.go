package lab

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/internal/jsonlite"
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
	// A real run's statements about the software that ran, which
	// real_expect reads as check.ID and runtime.KEY: what a probing
	// script's statements returned or threw (PHP's identity.php), and the
	// runtime's versions and features.
	Checks  map[string]string `json:"checks,omitempty"`
	Runtime map[string]string `json:"runtime,omitempty"`
	// Busy: a real run's machine was busy with other programs while it
	// ran, and how busy (harness.BusyShare); BusyCPUs is their average
	// use in CPUs. A comparison that missed is then inconclusive.
	Busy     string  `json:"busy,omitempty"`
	BusyCPUs float64 `json:"busy_cpus,omitempty"`
	// CallSpread: how much one new connection's call varies in the real
	// run's client runtime, where it measures it (harness.Tolerance.OneCall).
	CallSpread time.Duration `json:"-"`
}

// BlockResult is the outcome of one block: every variant and every
// expectation checked against them.
type BlockResult struct {
	ID       string           `json:"id"`
	Title    string           `json:"title,omitempty"`
	Variants []*VariantResult `json:"variants"`
	Checks   []Check          `json:"checks"`
	// Predict is the model's answer to the block's [predict] question
	// (none when the block asks none, or its metric has no value).
	Predict *PredictAnswer `json:"predict,omitempty"`
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
	var errorRead map[string]bool // variants whose error an expectation reads
	for _, v := range b.Variants {
		s, err := b.Scenario(v, set)
		if err != nil {
			return nil, nil, err
		}
		if verr := s.Validate(); verr != nil {
			if errorRead == nil {
				errorRead = b.errorsRead()
			}
			if errorRead[v.Name] {
				scns, errs = append(scns, nil), append(errs, verr)
				continue
			}
			return nil, nil, b.validationError(v, verr)
		}
		scns, errs = append(scns, &s), append(errs, nil)
	}
	return scns, errs, nil
}

// errorsRead lists the variants of b whose error an expectation reads.
func (b *Block) errorsRead() map[string]bool {
	out := map[string]bool{}
	for _, x := range b.Expects {
		x.walk(func(r refNode) {
			if r.block == b.ID && len(r.path) == 1 && r.path[0] == "error" {
				out[r.variant] = true
			}
		})
	}
	return out
}

func (b *Block) expectsError(variant string) bool { return b.errorsRead()[variant] }

func (b *Block) validationError(v *Variant, err error) error {
	line := v.Line
	// A loop, not errors.As, which would bring reflection into the
	// page's .wasm.
	for e := err; e != nil; e = errors.Unwrap(e) {
		if pe, ok := e.(*sim.ParamError); ok {
			if l := b.lineOfKey(v, pe.Key); l > 0 {
				line = l
			}
			break
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
	for _, id := range b.Needs() {
		if r := results[id]; r != nil {
			m[id] = blockMetrics(r)
		}
	}
	return b.check(m)
}

// CheckRun checks b's expectations against res, a run of b as written,
// running first the other blocks of l they read (as written, with seed):
// what a page's run of a block shows under it (sim serve, the page's
// model).
func (b *Block) CheckRun(ctx context.Context, l *Lab, res *BlockResult, seed uint64) ([]Check, error) {
	results := map[string]*BlockResult{b.ID: res}
	for _, id := range b.Needs()[1:] {
		nb, err := l.Block(id)
		if err != nil {
			return nil, err
		}
		nr, err := nb.RunVariants(ctx, RunOptions{Seed: seed})
		if err != nil {
			return nil, err
		}
		results[id] = nr
	}
	return b.Check(results), nil
}

func (b *Block) check(m Metrics) []Check {
	checks := make([]Check, 0, len(b.Expects))
	for _, x := range b.Expects {
		checks = append(checks, x.eval(m))
	}
	return checks
}

// blockMetrics gives each variant's values by name.
func blockMetrics(r *BlockResult) map[string]map[string]any {
	out := make(map[string]map[string]any, len(r.Variants))
	for _, v := range r.Variants {
		out[v.Name] = MetricsOf(v)
	}
	return out
}

// Run simulates the given blocks (every block if ids is empty), and the
// blocks their expectations read, then checks the expectations. Only the
// blocks asked for are returned, in the lab's order. Sink sees every block
// that runs. A cancelled ctx stops the work between blocks (and sim.Run
// within one) with ctx's error.
func (l *Lab) Run(ctx context.Context, ids []string, opt RunOptions) ([]*BlockResult, error) {
	byID := make(map[string]*Block, len(l.Blocks))
	for _, b := range l.Blocks {
		if _, dup := byID[b.ID]; !dup {
			byID[b.ID] = b
		}
	}
	if len(ids) == 0 {
		for _, b := range l.Blocks {
			ids = append(ids, b.ID)
		}
	}
	want := make(map[string]bool, len(ids))
	var need []*Block
	needed := map[string]bool{}
	for _, id := range ids {
		b := byID[id]
		if b == nil {
			_, err := l.Block(id) // the error lists the ids
			return nil, err
		}
		want[id] = true
		for _, dep := range b.Needs() {
			if d := byID[dep]; d != nil && !needed[dep] {
				needed[dep] = true
				need = append(need, d)
			}
		}
	}
	// Check every scenario before running any, so bad input never leaves a
	// half-written result.
	for _, b := range need {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, _, err := b.Scenarios(opt.Set); err != nil {
			return nil, err
		}
	}
	results := make(map[string]*BlockResult, len(need))
	for _, b := range need {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := b.RunVariants(ctx, opt)
		if err != nil {
			return nil, err
		}
		results[b.ID] = r
	}
	// Each result's metrics are built once, however many blocks read them.
	m := Metrics{}
	var out []*BlockResult
	for _, b := range l.Blocks {
		if !want[b.ID] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, id := range b.Needs() {
			if _, ok := m[id]; !ok && results[id] != nil {
				m[id] = blockMetrics(results[id])
			}
		}
		r := results[b.ID]
		r.Checks = b.check(m)
		if b.Predict != nil {
			r.Predict, _ = b.Predict.Answer(m) // a variant that was refused has no value: no answer
		}
		out = append(out, r)
	}
	return out, nil
}

// MetricsOf returns a variant's values by the names expectations use.
func MetricsOf(v *VariantResult) map[string]any {
	out := map[string]any{}
	if v.Summary != nil {
		// The names and values sim run --json prints (jsonlite writes
		// encoding/json's bytes; the page's model has no encoding/json).
		raw, _ := jsonlite.Marshal(v.Summary)
		m, _ := jsonlite.Decode(raw)
		out, _ = m.(map[string]any)
	}
	if v.Error != "" {
		out["error"] = v.Error
	} else {
		out["error"] = nil
	}
	for name, m := range map[string]map[string]string{"check": v.Checks, "runtime": v.Runtime} {
		if m != nil {
			o := make(map[string]any, len(m))
			for k, s := range m {
				o[k] = s
			}
			out[name] = o
		}
	}
	return out
}

// metricNames are the keys of a Summary (sim's schema) and of each Stat in
// it ("total_ms.p50"), and "error". A chain's hops and tiers, keyed by
// name, are knownChainMetric's (hop.NAME.METRIC).
var metricNames = func() map[string]bool {
	names := map[string]bool{"error": true}
	types := sim.NewSchema().Types
	for _, f := range types["Summary"] {
		if strings.HasSuffix(f.Type, "{}") {
			continue
		}
		names[f.Name] = true
		for _, sub := range types[f.Type] {
			names[f.Name+"."+sub.Name] = true
		}
	}
	return names
}()

func knownMetric(path []string) bool {
	return metricNames[strings.Join(path, ".")] || knownChainMetric(path)
}

// realMetric: check.ID or runtime.KEY, which only a real run has.
func realMetric(path []string) bool {
	return len(path) == 2 && (path[0] == "check" || path[0] == "runtime") && isName(path[1])
}

// CheckReal evaluates b's real_expect statements against a real run's
// results by block id (or a record's, see Record).
func (b *Block) CheckReal(results map[string]*BlockResult) []Check {
	m := Metrics{}
	for _, id := range b.realNeeds() {
		if r := results[id]; r != nil {
			m[id] = blockMetrics(r)
		}
	}
	checks := make([]Check, 0, len(b.RealExpects))
	for _, x := range b.RealExpects {
		checks = append(checks, x.eval(m))
	}
	return checks
}

// realNeeds lists the blocks b's real_expect statements read, b first.
func (b *Block) realNeeds() []string {
	ids := []string{b.ID}
	for _, x := range b.RealExpects {
		for _, id := range x.blocks() {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}
