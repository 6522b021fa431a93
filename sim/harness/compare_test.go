package harness

import (
	"math"
	"testing"

	"github.com/connlab/connlab/sim"
)

// TestComparePhases: the acceptance rule, max(5 %, 0.5 ms) of the model's
// median, phase by phase.
func TestComparePhases(t *testing.T) {
	model := &sim.Summary{Total: sim.Stat{P50: 100}, Connect: sim.Stat{P50: 1}, AppConnect: sim.Stat{P50: 10}, StartTransfer: sim.Stat{P50: 50}}
	measured := &sim.Summary{Total: sim.Stat{P50: 106}, Connect: sim.Stat{P50: 1.4}, AppConnect: sim.Stat{P50: 10.6}, StartTransfer: sim.Stat{P50: 47.6}}
	rows := ComparePhases(model, measured, DefaultTolerance)
	want := map[string]struct {
		pct float64
		ok  bool
	}{
		"namelookup":    {0, true},
		"connect":       {40, true},   // 0.4 ms off: within 0.5 ms
		"appconnect":    {6, false},   // 0.6 ms off, beyond 0.5 ms and 5 %
		"starttransfer": {-4.8, true}, // within 5 %
		"total":         {6, false},   // 6 ms off: beyond 5 %
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		w := want[r.Phase]
		if math.Abs(r.ErrorPct-w.pct) > 1e-9 || r.OK != w.ok {
			t.Errorf("%s: %+v, want %v %v", r.Phase, r, w.pct, w.ok)
		}
	}
}
