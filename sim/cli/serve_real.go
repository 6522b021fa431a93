package cli

import (
	"context"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness"
	"github.com/connlab/connlab/sim/lab"
	"github.com/connlab/connlab/sim/server"
)

// The page's "Run real" button runs the block on real loopback servers
// through the harness, with the real nginx and redis-server when they are
// installed, and sets each phase beside the model by sim validate's rule.
func init() {
	serveReal = func(ctx context.Context, b *lab.Block, set []lab.Setting, variants []string, seed uint64, sink func(string, *sim.Event)) (*lab.BlockResult, error) {
		return harness.RunBlock(ctx, b, harness.Options{
			Set: set, Variants: variants, Seed: seed, Real: []string{"nginx", "redis"},
			Sink: func(_, variant string, e *sim.Event) { sink(variant, e) },
		})
	}
	serveCompare = func(model, measured *sim.Summary) []server.CompareRow {
		rows := harness.ComparePhases(model, measured, harness.DefaultTolerance)
		out := make([]server.CompareRow, len(rows))
		for i, r := range rows {
			out[i] = server.CompareRow{Phase: r.Phase, ModelMS: r.ModelMS, MeasuredMS: r.MeasuredMS, ErrorPct: r.ErrorPct, OK: r.OK}
		}
		return out
	}
}
