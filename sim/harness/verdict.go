package harness

import (
	"fmt"
	"math"
	"time"

	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/harness/stack"
	"github.com/connlab/connlab/sim/harness/wire"
)

// A variant run for real ends in one of three verdicts. It agrees when
// every phase and count is within tolerance. It disagrees when one is not
// and the machine gave the run what it needed, or when what missed is
// something a busy machine cannot cause: a count that does not depend on
// timing, a phase quicker than the model. It is inconclusive when it
// missed only where a busy machine slows a run down, and the machine was
// measured busy during it (busyReason): then the comparison measured the
// machine, not the model, and says so instead of judging the model.
const (
	VerdictAgree        = "agree"
	VerdictDisagree     = "disagree"
	VerdictInconclusive = "inconclusive"
)

// BusyOthersCPUs is the share of the machine other programs may take
// during a real run before the run counts as disturbed (kernel.Busy).
const BusyOthersCPUs = kernel.BusyOthersCPUs

// busyShare says how other programs disturbed a run, or "" when they took
// less than BusyOthersCPUs of the machine (or the share is not known).
func busyShare(sh *wire.Share) string {
	if sh == nil {
		return ""
	}
	ms := func(x float64) time.Duration { return time.Duration(x * 1e6) }
	if !kernel.Busy(ms(sh.OthersCPUMS+sh.StealMS), ms(sh.WallMS), sh.OthersProcs) {
		return ""
	}
	return sh.String()
}

// busyStack says how other programs disturbed a stack variant's measured
// window or the calibration window its model was fitted to, or "".
func busyStack(r *stack.Result) string {
	if r == nil {
		return ""
	}
	say := func(which string, w *stack.Result) string {
		return fmt.Sprintf("other programs used %.2f CPUs on average during the %s window (the machine's CPUs were busy %.0f ms in %.1f s; the stack's processes' share is not counted)",
			w.BackgroundCPU, which, w.MachineCPUMS, w.DurationS)
	}
	if r.BackgroundCPU >= BusyOthersCPUs {
		return say("measured", r)
	}
	if c := r.Calibration; c != nil && c.BackgroundCPU >= BusyOthersCPUs {
		return say("calibration", c)
	}
	return ""
}

// busyReason says why the machine could not give vc's last attempt what it
// needed: other programs took a share of its CPUs, or the harness fell
// behind its own emulated network by as much as the phases missed by
// (harnessLate); "" when neither was measured.
func (vc *VariantComparison) busyReason(share *wire.Share, st *stack.Result) string {
	if s := busyShare(share); s != "" {
		return s
	}
	if s := busyStack(st); s != "" {
		return s
	}
	if vc.HarnessLate != "" {
		return vc.HarnessLate
	}
	return ""
}

// judge gives vc its verdict from its last attempt (the comparison's rows,
// the machine's share during the run).
func (vc *VariantComparison) judge(share *wire.Share, st *stack.Result) {
	vc.Share = share
	vc.judgeBusy(func() string { return vc.busyReason(share, st) })
}

// PhaseVerdict is the verdict of a real run's phases alone (the page's Run
// real compares no counts), given busy, what BusyShare said of the run's
// share of the machine: a verdict, and the text of an inconclusive one or
// of a disagreement that is not the machine's.
func PhaseVerdict(rows []PhaseRow, busy string) (verdict, text string) {
	vc := &VariantComparison{Phases: rows, OK: true}
	for _, p := range rows {
		vc.OK = vc.OK && p.OK
	}
	vc.judgeBusy(func() string { return busy })
	return vc.Verdict, vc.Inconclusive + vc.Why
}

// BusyShare is busyShare, for a run's share as the lab process read it:
// what other programs took when the machine was busy, or "".
func BusyShare(sh *wire.Share) string { return busyShare(sh) }

// judgeBusy gives vc its verdict; busy says why the machine was busy, or
// "" (asked only when the verdict depends on it).
func (vc *VariantComparison) judgeBusy(busy func() string) {
	vc.Verdict, vc.Inconclusive, vc.Why = VerdictAgree, "", ""
	switch {
	case vc.OK && vc.Skipped != "":
		vc.Verdict = "" // not compared
		return
	case vc.OK:
		return
	case vc.ModelError != "" || vc.RealError != "":
		vc.Verdict = VerdictDisagree // an exception's words do not depend on time
		return
	}
	vc.Verdict = VerdictDisagree
	if why := vc.timingOnly(); why != "" {
		vc.Why = why
		return
	}
	if busy := busy(); busy != "" {
		vc.Verdict = VerdictInconclusive
		vc.Inconclusive = "machine busy: " + busy + "; what missed (" + vc.missed() + ") is what a busy machine slows down: run it again on a quieter machine"
	}
}

// perRequestConns: a hop that opened at least this many connections a
// request for real opens one for every request; the model keeping them
// (opening fewer than half as many) is then a disagreement however busy
// the machine was.
const perRequestConns = 0.9

// timingOnly says what in vc missed that a busy machine cannot explain:
// a count compared exactly (it does not depend on timing, unless the
// server's idle timer raced the requests), a phase
// measured quicker than the model by more than the client's CPU costs the
// run measured for the model (a busy machine only adds time, to the run
// and to those measurements), or a
// stack's count that misses even scaled to the requests the window
// measured where the hop opens one a call (ChainRow.perCall), or a hop the
// model keeps that opened one a request for real (perRequestConns). A
// stack's throughput may miss either way: its model is fitted to the
// calibration window's costs and background, so a machine busier then
// than in the measured window makes the model the slower one. "" when
// everything that missed could be the machine's.
func (vc *VariantComparison) timingOnly() string {
	// Where the server's idle timer raced requests (either side saw a
	// race), which side of the close a request landed on hangs on
	// milliseconds, and the counts follow it: a request that met the
	// close retries on a new connection, or fails.
	raced := vc.Model != nil && vc.Measured != nil && (vc.Model.Races > 0 || vc.Measured.Races > 0)
	for _, c := range vc.Counts {
		if !c.OK && c.Allowed == "exact" && !raced {
			return fmt.Sprintf("%s %v, model %v: a count compared exactly does not depend on how busy the machine was", c.Name, c.Measured, c.Model)
		}
	}
	for _, p := range vc.Phases {
		// The model itself may be slower by what the run measured of the
		// client's CPU on the busy machine (MeasuredCostMS); by more, it
		// was not the machine.
		if !p.OK && p.MeasuredMS < p.ModelMS && p.ModelMS-p.MeasuredMS-p.ToleranceMS > vc.MeasuredCostMS {
			return fmt.Sprintf("%s %.3f ms is quicker than the model's %.3f ms by more than the tolerance and the %.3f ms of CPU this run measured for the model: a busy machine only adds time", p.Phase, p.MeasuredMS, p.ModelMS, vc.MeasuredCostMS)
		}
	}
	if vc.Chain == nil || vc.Model == nil || vc.Measured == nil || vc.Model.Requests == 0 {
		return ""
	}
	scale := float64(vc.Measured.Requests) / float64(vc.Model.Requests)
	for _, r := range vc.Chain.Rows {
		if r.OK || r.Allowed == "shown" {
			continue
		}
		// A busy machine changes how many requests the window holds, not
		// what each request does where a hop opens a connection for every
		// call: there the model's count for the requests the window
		// measured must still be within tolerance. A hop that keeps its
		// connections opens as many as its requests overlap, which stalls
		// change (stack-connections/tiers: nginx's keepalive 8 per worker
		// under 60 users), and who closes first (each side's TIME_WAIT) is
		// a race.
		if r.Metric != "connects" {
			continue
		}
		perModel, perReal := r.Model/float64(vc.Model.Requests), r.Measured/float64(max(vc.Measured.Requests, 1))
		if !r.perCall {
			if perReal >= perRequestConns && perModel < perReal/2 {
				return fmt.Sprintf("%s connects %.0f for %d requests: the real hop opens one a request where the model keeps them (%.0f for %d), which a busy machine does not change",
					r.Hop, r.Measured, vc.Measured.Requests, r.Model, vc.Model.Requests)
			}
			continue
		}
		want := r.Model * scale
		allowed := max(float64(StackTolerancePct)/100*want, StackSlack)
		if math.Abs(r.Measured-want) > allowed+1e-9 {
			hop := r.Hop
			if r.Side != "" {
				hop += " " + r.Side
			}
			return fmt.Sprintf("%s %s %.0f, model %.0f for the %d requests measured (%.0f for its own %d): it misses per request too, which a busy machine does not change",
				hop, r.Metric, r.Measured, want, vc.Measured.Requests, r.Model, vc.Model.Requests)
		}
	}
	return ""
}
