package harness

import (
	"math"
	"testing"
	"time"

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

// summaryOf collects calls: newMS on new connections, reusedMS on kept ones.
func summaryOf(newMS, reusedMS []float64) *sim.Summary {
	var c sim.Collector
	add := func(ms float64, isNew bool) {
		d := time.Duration(ms * 1e6)
		c.Add(&sim.Event{Kind: sim.KindCall, NewConn: isNew, Reused: !isNew, StartTransfer: d, Total: d})
	}
	for _, v := range newMS {
		add(v, true)
	}
	for _, v := range reusedMS {
		add(v, false)
	}
	s := c.Summary()
	return &s
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestComparePhasesMixed: with as many calls on new connections as on kept
// ones (a connection per request, two calls each), the median of all calls
// is the midpoint of the slowest reused call and the quickest new one; a
// few late reused calls move it by milliseconds, so it is shown, not held
// to the tolerance, and each kind is compared on its own.
func TestComparePhasesMixed(t *testing.T) {
	model := summaryOf(repeat(15.05, 60), repeat(5.05, 60))
	late := append(repeat(5.07, 57), 5.7, 6.3, 6.7)
	measured := summaryOf(repeat(15.3, 60), late)
	rows := map[string]PhaseRow{}
	for _, r := range ComparePhases(model, measured, DefaultTolerance) {
		rows[r.Phase] = r
	}
	if r := rows["total"]; r.MeasuredMS < 10.8 || r.Note == "" || !r.OK || r.ToleranceMS != 0 {
		t.Errorf("total: %+v, want a note and no verdict", r)
	}
	if r := rows["starttransfer"]; r.Note == "" || !r.OK {
		t.Errorf("starttransfer: %+v, want a note", r)
	}
	if r := rows["total, new conn"]; r.ModelMS != 15.05 || r.MeasuredMS != 15.3 || !r.OK || r.Note != "" {
		t.Errorf("new conn: %+v", r)
	}
	if r := rows["total, reused"]; r.ModelMS != 5.05 || r.MeasuredMS != 5.07 || !r.OK {
		t.Errorf("reused: %+v", r)
	}

	// Reused calls a millisecond slow fail on their own row.
	slow := summaryOf(repeat(15.3, 60), repeat(6.1, 60))
	for _, r := range ComparePhases(model, slow, DefaultTolerance) {
		if r.Phase == "total, reused" && r.OK {
			t.Errorf("reused calls 1 ms slow passed: %+v", r)
		}
	}

	// One new connection in three: the median is among the reused calls and
	// is held to the tolerance.
	model = summaryOf(repeat(15.05, 40), repeat(5.05, 80))
	measured = summaryOf(repeat(15.3, 40), repeat(6.1, 80))
	for _, r := range ComparePhases(model, measured, DefaultTolerance) {
		if r.Note != "" {
			t.Errorf("%s: note %q with one new connection in three", r.Phase, r.Note)
		}
		if (r.Phase == "total" || r.Phase == "total, reused") && r.OK {
			t.Errorf("%s: %+v passed 1 ms slow", r.Phase, r)
		}
	}
}
