package harness

import (
	"context"
	"testing"

	"github.com/connlab/connlab/sim/lab"
)

// TestValidateTWReuseLoopback runs a port-exhaustion variant as sim
// validate does by default: 2,000 connections in 10 s to a loopback server
// with tcp_tw_reuse = 2. The run always spans one of the kernel's 10 s port
// reshuffles, after which connect() may take over TIME_WAIT ports, in the
// kernel and in the model alike but rarely as many; the counts must agree
// anyway.
func TestValidateTWReuseLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("real runs")
	}
	var b *lab.Block
	for _, blk := range readLab(t, "port-exhaustion.md").Blocks {
		if blk.ID == "tw-reuse" {
			b = blk
		}
	}
	if b == nil {
		t.Fatal("port-exhaustion.md has no block tw-reuse")
	}
	opt := testOptions()
	opt.MaxDuration, opt.MaxRequests, opt.Variants = DefaultMaxDuration, DefaultMaxRequests, []string{"loopback-only-local"}
	bv, err := Validate(context.Background(), b, opt, DefaultTolerance, 0) // no second chance for counts
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range bv.Variants {
		for _, c := range v.Counts {
			if !c.OK {
				t.Errorf("%s/%s: %s: model %v, measured %v (%s)", b.ID, v.Name, c.Name, c.Model, c.Measured, c.Allowed)
			} else if c.Name == "time_wait_peak" || c.Name == "time_wait_reused" {
				t.Logf("%s: model %v, measured %v (%s)", c.Name, c.Model, c.Measured, c.Allowed)
			}
		}
	}
}
