package harness

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
)

// TestComparePhases: DefaultTolerance, max(5 %, 0.5 ms) of the model's
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
	if len(rows) != len(sim.CurlPhases()) {
		t.Fatalf("%d rows, want one a phase of the Summary", len(rows))
	}
	seen := 0
	for _, r := range rows {
		w, ok := want[r.Phase]
		if ok {
			seen++
		} else { // a phase neither summary sets: no error
			w.ok = true
		}
		if math.Abs(r.ErrorPct-w.pct) > 1e-9 || r.OK != w.ok {
			t.Errorf("%s: %+v, want %v %v", r.Phase, r, w.pct, w.ok)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d phases compared", seen, len(want))
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

// TestComparePhasesFewCalls: the idle block's pause-60s (one new call, a
// reused one, a pause, two reused ones): the median of its four calls is
// the midpoint of two reused calls, one of them the call after the pause,
// which ran 2 to 7 ms slower in real PHP runs; it is shown, not held, and
// the reused calls, the median of three, are held. With more calls the
// median is held again.
func TestComparePhasesFewCalls(t *testing.T) {
	model := summaryOf([]float64{98}, repeat(14.6, 3))
	measured := summaryOf([]float64{101}, []float64{14.8, 22, 14.9})
	rows := map[string]PhaseRow{}
	for _, r := range ComparePhases(model, measured, DefaultTolerance) {
		rows[r.Phase] = r
	}
	for _, ph := range []string{"total", "starttransfer"} {
		if r := rows[ph]; r.Note != FewCallsNote || !r.OK || r.ToleranceMS != 0 {
			t.Errorf("%s: %+v, want FewCallsNote and no verdict", ph, r)
		}
	}
	if r := rows["total, reused"]; r.Note != "" || !r.OK || r.MeasuredMS != 14.9 {
		t.Errorf("reused: %+v, want held and within tolerance", r)
	}
	slow := summaryOf([]float64{101}, []float64{16.8, 22, 16.9})
	for _, r := range ComparePhases(model, slow, DefaultTolerance) {
		if r.Phase == "total, reused" && r.OK {
			t.Errorf("reused calls 2 ms slow passed: %+v", r)
		}
	}
	model = summaryOf([]float64{98}, repeat(14.6, 5))
	measured = summaryOf([]float64{101}, []float64{14.8, 22, 22, 14.9, 22})
	for _, r := range ComparePhases(model, measured, DefaultTolerance) {
		if r.Note != "" {
			t.Errorf("%s: note %q with six calls", r.Phase, r.Note)
		}
	}
}

// TestCompareTimeWait: towards a loopback server with tcp_tw_reuse = 2,
// the kernel can take over some of 2,000 TIME_WAIT ports where the model
// takes over none (or another number: both take over the ports their
// random search lands on): the peak agrees once those are added back, and
// only then.
func TestCompareTimeWait(t *testing.T) {
	rows := func(model, measured sim.Summary, timing bool) map[string]CountRow {
		out := map[string]CountRow{}
		for _, r := range CompareCounts(&model, &measured, timing, true, false) {
			out[r.Name] = r
		}
		return out
	}
	model := sim.Summary{Connects: 2000, TimeWaitPeak: 2000, DurationS: 10}
	measured := sim.Summary{Connects: 2000, TimeWaitPeak: 1962, TimeWaitReused: 38, DurationS: 10}
	r := rows(model, measured, false)
	if p := r["time_wait_peak"]; !p.OK || !strings.HasPrefix(p.Allowed, "exact with the TIME_WAIT ports taken over added back: 2000 + 0 vs 1962 + 38") {
		t.Errorf("38 taken over: %+v", p)
	}
	if u := r["time_wait_reused"]; !u.OK || u.Model != 0 || u.Measured != 38 || !strings.HasPrefix(u.Allowed, "not compared") {
		t.Errorf("time_wait_reused: %+v", u)
	}
	// Both took over ports, different numbers (one run of the lab's
	// loopback variant: the model 72, the kernel 24): the sum is compared.
	model2 := sim.Summary{Connects: 2000, TimeWaitPeak: 1928, TimeWaitReused: 72, DurationS: 10}
	measured2 := sim.Summary{Connects: 2000, TimeWaitPeak: 1976, TimeWaitReused: 24, DurationS: 10}
	r = rows(model2, measured2, false)
	if p := r["time_wait_peak"]; !p.OK || !strings.HasPrefix(p.Allowed, "exact with the TIME_WAIT ports taken over added back: 1928 + 72 vs 1976 + 24") {
		t.Errorf("72 and 24 taken over: %+v", p)
	}
	if u := r["time_wait_reused"]; !u.OK || u.Model != 72 || u.Measured != 24 || !strings.HasPrefix(u.Allowed, "not compared") {
		t.Errorf("time_wait_reused: %+v", u)
	}
	measured2.TimeWaitPeak = 1977
	if p := rows(model2, measured2, false)["time_wait_peak"]; p.OK {
		t.Errorf("one TIME_WAIT socket too many passed: %+v", p)
	}
	// A socket missing that was not taken over still fails.
	measured.TimeWaitReused = 37
	if p := rows(model, measured, false)["time_wait_peak"]; p.OK {
		t.Errorf("one TIME_WAIT socket unaccounted for passed: %+v", p)
	}
	// Nothing taken over on either side: the peak itself, exactly, and no
	// row for what was not taken over.
	measured.TimeWaitReused, measured.TimeWaitPeak = 0, 1999
	r = rows(model, measured, false)
	if p := r["time_wait_peak"]; p.OK || p.Allowed != "exact" {
		t.Errorf("1999 for 2000, nothing taken over: %+v", p)
	}
	if _, ok := r["time_wait_reused"]; ok {
		t.Error("a time_wait_reused row with nothing taken over")
	}
	// Overlapping pool requests: the sum within ±max(2, 10 %).
	model = sim.Summary{TimeWaitPeak: 40, TimeWaitReused: 2, DurationS: 10}
	measured = sim.Summary{TimeWaitPeak: 30, TimeWaitReused: 9, DurationS: 10}
	if p := rows(model, measured, true)["time_wait_peak"]; !p.OK || !strings.HasPrefix(p.Allowed, "±5 with") {
		t.Errorf("timing: %+v", p)
	}
	// Sockets expire in a run of a minute or more: the peak no longer
	// adds up, and says so.
	model.DurationS = 90
	r = rows(model, measured, false)
	if p := r["time_wait_peak"]; !p.OK || !strings.HasPrefix(p.Allowed, "not compared: TIME_WAIT sockets expired") {
		t.Errorf("90 s: %+v", p)
	}
	// ... and the sampler's count of takeovers is said to be unreliable.
	if u := r["time_wait_reused"]; !u.OK || !strings.Contains(u.Allowed, "not reliable") {
		t.Errorf("90 s: %+v", u)
	}
}

// TestComparePhasesPerTrip: the harness's overhead is allowed once for
// every round trip a phase holds. At 5 ms of RTT with TLS 1.3, a call on a
// new connection is three round trips (TCP, TLS, the request) and a reused
// one is one; with 0.4 ms measured, 0.3 ms (MaxTare) a round trip goes
// into the tolerance: 0.5 + 3 × 0.3 = 1.4 ms and 0.5 + 0.3 = 0.8 ms.
func TestComparePhasesPerTrip(t *testing.T) {
	s := sim.Default()
	s.RTT, s.TLS, s.DNS, s.ServerTime, s.ResponseBytes, s.SetupRTTs = 5*time.Millisecond, sim.TLS13, 0, 0, 200, 0
	tol := DefaultTolerance.WithTare(400*time.Microsecond, &s)
	if tol.PerTrip != MaxTare {
		t.Fatalf("per round trip %s, want MaxTare", tol.PerTrip)
	}
	model := summaryOf(repeat(15, 10), repeat(5, 30))
	measured := summaryOf(repeat(16.3, 10), repeat(5.9, 30)) // 1.3 and 0.9 ms over
	want := map[string]struct {
		tol float64
		ok  bool
	}{
		"total, new conn": {1.4, true},
		"total, reused":   {0.8, false},
		"total":           {0.8, false}, // mostly reused calls: one round trip
		"starttransfer":   {0.8, false},
	}
	for _, r := range ComparePhases(model, measured, tol) {
		if w, ok := want[r.Phase]; ok && (math.Abs(r.ToleranceMS-w.tol) > 1e-9 || r.OK != w.ok) {
			t.Errorf("%s: tolerance %.3f ms ok %v, want %.3f %v", r.Phase, r.ToleranceMS, r.OK, w.tol, w.ok)
		}
	}
	// TLS 1.2, a DNS lookup, server work and a response of three windows:
	// a new connection's call waits 1 + 1 + 2 + 3 + 1 times.
	s.TLS, s.DNS, s.ServerTime, s.ResponseBytes = sim.TLS12, 30*time.Millisecond, 2*time.Millisecond, 50000
	tr := TripsOf(&s)
	for phase, n := range map[string]int{"namelookup": 1, "connect": 2, "appconnect": 4, "total, new conn": 8, "total, reused": 4} {
		if got := tr.of(phase, false); got != n {
			t.Errorf("%s: %d waits, want %d", phase, got, n)
		}
	}
	if got := tol.String(); !strings.Contains(got, "round trip") {
		t.Errorf("tolerance %q does not say it is per round trip", got)
	}
}

// TestComparePhasesOneCall: a median of one or two calls on new
// connections allows one call's measured variation (Tolerance.OneCall) on
// top; a median of more calls, or of reused ones, does not.
func TestComparePhasesOneCall(t *testing.T) {
	tol := DefaultTolerance
	tol.OneCall = 1500 * time.Microsecond
	rowOf := func(rows []PhaseRow, phase string) PhaseRow {
		for _, r := range rows {
			if r.Phase == phase {
				return r
			}
		}
		t.Fatalf("no row %q", phase)
		return PhaseRow{}
	}
	// One call on a new connection and two reused (a CLI script): 4 ms
	// over a model of 62 ms is beyond 5 % (3.1 ms), within 3.1 + 1.5.
	model := summaryOf([]float64{62}, []float64{7.8, 7.8})
	got := rowOf(ComparePhases(model, summaryOf([]float64{66}, []float64{7.8, 7.8}), tol), "total, new conn")
	if !got.OK || got.OneCallMS != 1.5 || math.Abs(got.ToleranceMS-4.6) > 1e-9 {
		t.Errorf("one new call 4 ms over: %+v, want ok within 4.6 ms, 1.5 of it one call's", got)
	}
	got = rowOf(ComparePhases(model, summaryOf([]float64{67}, []float64{7.8, 7.8}), tol), "total, new conn")
	if got.OK {
		t.Errorf("one new call 5 ms over: %+v, want outside 4.6 ms", got)
	}
	if r := rowOf(ComparePhases(model, summaryOf([]float64{66}, []float64{7.8, 7.8}), DefaultTolerance), "total, new conn"); r.OK || r.OneCallMS != 0 {
		t.Errorf("without a measured spread: %+v, want outside 3.1 ms", r)
	}
	if r := rowOf(ComparePhases(model, summaryOf([]float64{62}, []float64{9, 9}), tol), "total, reused"); r.OK || r.OneCallMS != 0 {
		t.Errorf("two reused calls 1.2 ms over: %+v, want no one-call allowance", r)
	}
	// A new call and a reused one (two requests, the second reusing): the
	// setup phases' median is the midpoint of the two.
	model = summaryOf([]float64{62}, []float64{7.8})
	got = rowOf(ComparePhases(model, summaryOf([]float64{66}, []float64{7.8}), tol), "appconnect")
	if got.OneCallMS != 1.5 {
		t.Errorf("a new and a reused call: %+v, want the allowance on their median", got)
	}
	// Three new calls: their median averages one call's variation.
	model = summaryOf(repeat(62, 3), []float64{7.8})
	got = rowOf(ComparePhases(model, summaryOf(repeat(66, 3), []float64{7.8}), tol), "total, new conn")
	if got.OK || got.OneCallMS != 0 {
		t.Errorf("three new calls 4 ms over: %+v, want outside 3.1 ms", got)
	}
	// A single call that opens a connection: every curl phase is that call.
	got = rowOf(ComparePhases(summaryOf([]float64{62}, nil), summaryOf([]float64{66}, nil), tol), "total")
	if !got.OK || got.OneCallMS != 1.5 {
		t.Errorf("one call in all: %+v, want the allowance on total", got)
	}
}

// TestHarnessLate: an attempt outside tolerance measured the harness when
// its late wake-ups were as large as every miss and many enough to move the
// medians; not when a miss is larger, the late ones are few, or a count
// missed. The figures are CI's: 25 new connections, "total, new conn"
// 28.741 ms against 22.825 ± 1.277, 30 writes late by up to 12.150 ms.
func TestHarnessLate(t *testing.T) {
	ci := func() *VariantComparison {
		return &VariantComparison{
			Measured:          &sim.Summary{Calls: 200, Connects: 25, Reused: 175},
			Phases:            []PhaseRow{{Phase: "total, new conn", ModelMS: 22.825, MeasuredMS: 28.741, ToleranceMS: 1.277}, {Phase: "total, reused", ModelMS: 17.9, MeasuredMS: 17.6, ToleranceMS: 0.9, OK: true}},
			Counts:            []CountRow{{Name: "connects", Model: 25, Measured: 25, OK: true}},
			HarnessWriteLagMS: 12.150, LateWrites: 30,
		}
	}
	if got := ci().harnessLate(); !strings.Contains(got, "12.150 ms") || !strings.Contains(got, "30 reads or writes") {
		t.Errorf("CI's attempt: %q, want the harness's lateness named", got)
	}
	for name, change := range map[string]func(*VariantComparison){
		"a miss larger than the lag": func(v *VariantComparison) { v.HarnessWriteLagMS = 5 },
		"a miss below the model":     func(v *VariantComparison) { v.Phases[0].MeasuredMS = 21.4 },
		"few late wake-ups":          func(v *VariantComparison) { v.LateWrites = 12 },
		"a count outside":            func(v *VariantComparison) { v.Counts[0].OK = false },
		"within tolerance":           func(v *VariantComparison) { v.OK, v.Phases[0].OK = true, true },
	} {
		v := ci()
		change(v)
		if got := v.harnessLate(); got != "" {
			t.Errorf("%s: %q, want none", name, got)
		}
	}
	// Late reads count as late writes do.
	v := ci()
	v.HarnessWriteLagMS, v.LateWrites, v.HarnessLagMS, v.LateReads = 0, 0, 6, 13
	if got := v.harnessLate(); got == "" {
		t.Error("late reads: none, want the harness named")
	}
}
