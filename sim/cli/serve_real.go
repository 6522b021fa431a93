package cli

import (
	"context"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness"
	"github.com/connlab/connlab/sim/lab"
)

// The page's "Run real" button runs the block on real loopback servers
// through the harness, with the real nginx and redis-server when they are
// installed; the server sets each phase beside the model by sim validate's
// rule (harness.ComparePhases).
func init() {
	serveReal = func(ctx context.Context, b *lab.Block, set []lab.Setting, variants []string, seed uint64, sink func(string, *sim.Event)) (*lab.BlockResult, error) {
		return harness.RunBlock(ctx, b, harness.Options{
			Set: set, Variants: variants, Seed: seed, Real: []string{"nginx", "redis"},
			Sink: func(_, variant string, e *sim.Event) { sink(variant, e) },
		})
	}
	serveTare = func(ctx context.Context, rtt time.Duration) (time.Duration, error) {
		return harness.Tare(ctx, rtt, harness.Options{})
	}
}
