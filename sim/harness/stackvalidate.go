package harness

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/stack"
	"github.com/connlab/connlab/sim/lab"
)

// A stack variant is compared per hop and per side: the connections each
// hop opened and the TIME_WAIT sockets on its connecting and accepting
// sides in the measured window, and the stack's throughput. Latency
// percentiles and the tiers' utilisation are shown beside them.

// StackTolerancePct: the model's throughput and counts may differ from the
// real stack's by this percentage of the model's value, or by StackSlack
// for small counts (connections closing on a slice's edge).
const (
	StackTolerancePct = 15
	StackSlack        = 3
)

// StackTolerance describes the stack comparison's tolerance, for outputs.
var StackTolerance = fmt.Sprintf("throughput and counts within %d%% of the model's (counts: or ±%d)", StackTolerancePct, StackSlack)

// ChainRow sets one measured value of a stack variant against the model's.
type ChainRow struct {
	Hop      string  `json:"hop,omitempty"`  // the hop's accepting tier; "" for the whole stack
	Side     string  `json:"side,omitempty"` // client (connecting), server (accepting), both
	Metric   string  `json:"metric"`
	Model    float64 `json:"model"`
	Measured float64 `json:"measured"`
	ErrorPct float64 `json:"error_pct"` // (measured - model) / model; 0 when the model says 0
	// Allowed is "±15%" (or "±3" for a small count); "shown" for values
	// not held to a tolerance.
	Allowed string `json:"allowed"`
	OK      bool   `json:"ok"`
	// Note says why a row is not compared or held to a bound.
	Note string `json:"note,omitempty"`
	// perCall: the hop's connecting side opens a connection for every
	// call in the model's scenario (reuse = none; for the first hop, the
	// load without client_keepalive), so its connects follow the requests
	// one for one however busy the machine was.
	perCall bool
}

// RaceShare is who closed first on a hop whose connections ended with
// their exchange, in a stack variant's measured window.
type RaceShare struct {
	Hop    string `json:"hop"`
	Closes int    `json:"closes"`
	// Server: the accepting side alone held the TIME_WAIT socket (it
	// closed first); Both: each side held one (a simultaneous close);
	// Client: the connecting side alone.
	Server float64 `json:"server"`
	Both   float64 `json:"both"`
	Client float64 `json:"client"`
	// Preset is the software's preset (server_closes_first,
	// simultaneous_close), the median of the recorded runs.
	Preset [2]float64 `json:"preset"`
}

// ChainComparison is a stack variant's comparison.
type ChainComparison struct {
	Rows []ChainRow `json:"rows"`
	// Input is what the model was given from measurement.
	Input *StackModelInput `json:"model_input,omitempty"`
	// Race: the close race's shares measured in the window.
	Race []RaceShare `json:"close_race,omitempty"`
	// CPUPerRequestMS: each tier's CPU per request in the measured window
	// and in the model given the calibrated costs.
	CPUPerRequestMS map[string][2]float64 `json:"cpu_per_request_ms,omitempty"`
}

// opensPerCall reports whether hop i of sc's chain (the hop into tier i)
// opens a connection for every call: its connecting side, the load for the
// first hop and tier i-1 for the others, keeps none.
func opensPerCall(sc *sim.Scenario, i int) bool {
	switch {
	case sc == nil || i < 0 || i > len(sc.Tiers):
		return false
	case i == 0:
		return !sc.ClientKeepalive
	}
	return sc.TierScenario(i-1).Reuse == sim.ReuseNone
}

// overlapCounts says which of hop i's counts follow how its requests
// overlap rather than how many there are, where the connecting side keeps
// its connections. An nginx whose idle cache per worker (keepalive N) is
// smaller than the requests it serves at once closes the connections
// beyond it after each answer: how many, and each side's TIME_WAIT, swing
// with the overlap, run to run and in the model with its calibrated costs
// (why: those rows are not compared, nor is the throughput, which pays for
// the connections opened again). A pool per process (redis-py) opens
// a connection only when more of its threads call at once than ever
// before: the window's connects are held to at most workers × threads.
func overlapCounts(sc *sim.Scenario, i int) (why string, bound int) {
	if sc == nil || i < 1 || i > len(sc.Tiers) {
		return "", 0
	}
	t := sc.TierScenario(i - 1)
	switch {
	case t.Reuse == sim.ReuseUpstreamKeepalive && t.UpstreamKeepalive*t.Workers < sc.Concurrency:
		return fmt.Sprintf("%s keeps %d idle connections per worker (%d in all) for up to %d requests at once; how many close after each answer follows how the requests overlap, which moves from run to run",
			sc.Tiers[i-1].Name, t.UpstreamKeepalive, t.UpstreamKeepalive*t.Workers, sc.Concurrency), 0
	case t.Reuse == sim.ReusePool && t.Threads > 0:
		return "", t.Workers * t.Threads
	}
	return "", 0
}

// compareChain fills vc from a stack variant's model and measured
// summaries.
func compareChain(vc *VariantComparison, mv, rv *lab.VariantResult, info *VariantRun) {
	vc.Phases, vc.Counts = []PhaseRow{}, nil
	if rv.Summary == nil {
		vc.OK = true
		vc.Skipped = strings.TrimPrefix(rv.Error, "not run for real: ")
		return
	}
	if mv.Summary == nil {
		vc.OK = false
		vc.Skipped = ""
		return
	}
	vc.Model, vc.Measured = mv.Summary, rv.Summary
	cc := &ChainComparison{Input: info.StackInput}
	m, r := mv.Summary, rv.Summary
	held := func(hop, side, metric string, a, b float64, slack float64) {
		allowed := float64(StackTolerancePct) / 100 * a
		label := fmt.Sprintf("±%d%%", StackTolerancePct)
		if slack > allowed {
			allowed, label = slack, fmt.Sprintf("±%g", slack)
		}
		row := ChainRow{Hop: hop, Side: side, Metric: metric, Model: a, Measured: b, Allowed: label, OK: math.Abs(b-a) <= allowed+1e-9}
		if a != 0 {
			row.ErrorPct = math.Round(1000*(b-a)/a) / 10
		}
		cc.Rows = append(cc.Rows, row)
	}
	shown := func(hop, metric string, a, b float64) {
		row := ChainRow{Hop: hop, Metric: metric, Model: a, Measured: b, Allowed: "shown", OK: true}
		if a != 0 {
			row.ErrorPct = math.Round(1000*(b-a)/a) / 10
		}
		cc.Rows = append(cc.Rows, row)
	}
	held("", "", "throughput_rps", m.ThroughputRPS, r.ThroughputRPS, 0)
	throughput := len(cc.Rows) - 1
	shown("", "latency_p50_ms", m.Total.P50, r.Total.P50)
	shown("", "latency_p90_ms", m.Total.P90, r.Total.P90)
	shown("", "latency_p99_ms", m.Total.P99, r.Total.P99)
	for i, name := range m.Chain {
		mh, rh := m.Hop[name], r.Hop[name]
		if mh == nil || rh == nil {
			continue
		}
		from := len(cc.Rows)
		held(name, "", "connects", float64(mh.Connects), float64(rh.Connects), StackSlack)
		cc.Rows[from].perCall = opensPerCall(mv.Scenario, i)
		held(name, "client", "time_wait", float64(mh.TimeWaitClient), float64(rh.TimeWaitClient), StackSlack)
		held(name, "server", "time_wait", float64(mh.TimeWaitServer), float64(rh.TimeWaitServer), StackSlack)
		held(name, "both", "time_wait", float64(mh.Simultaneous), float64(rh.Simultaneous), StackSlack)
		switch why, bound := overlapCounts(mv.Scenario, i); {
		case why != "":
			for j := from; j < len(cc.Rows); j++ {
				cc.Rows[j].Allowed, cc.Rows[j].Note, cc.Rows[j].OK = "not compared", why, true
			}
			// Each connection closed after an answer is a new one to
			// open: the throughput follows the same overlap.
			t := &cc.Rows[throughput]
			t.Allowed, t.Note, t.OK = "not compared", "each connection closed after an answer is one more to open, so the throughput follows how the requests overlap too: "+why, true
		case bound > 0:
			c := &cc.Rows[from]
			c.Allowed, c.Note = fmt.Sprintf("≤ %d", bound), fmt.Sprintf("a pool grows to the overlap it meets, up to its workers × threads (%d): the window's new connections are held to at most that, in the model and for real", bound)
			c.OK = c.Model <= float64(bound) && c.Measured <= float64(bound)
		}
	}
	for _, name := range m.Chain {
		if mt, rt := m.Tier[name], r.Tier[name]; mt != nil && rt != nil {
			shown(name, "utilisation", mt.Utilisation, rt.Utilisation)
		}
	}
	if info.Stack != nil {
		cc.Race = raceReport(info.Stack, vc.Model.Chain, mv.Scenario)
		if in := info.StackInput; in != nil {
			cc.CPUPerRequestMS = map[string][2]float64{"load": {in.Costs.LoadCPU, info.Stack.CPUPerRequestMS["load"]}}
			for i, name := range m.Chain {
				if x, ok := info.StackModelCPU[name]; ok {
					cc.CPUPerRequestMS[name] = [2]float64{x, info.Stack.CPUPerRequestMS[stackTierRole(i)]}
				}
			}
		}
	}
	vc.Chain = cc
	vc.OK = true
	for _, row := range cc.Rows {
		vc.OK = vc.OK && row.OK
	}
}

// raceReport reads who closed first on each hop of a measured window that
// closed connections with their exchange.
func raceReport(r *stack.Result, names []string, s *sim.Scenario) []RaceShare {
	var out []RaceShare
	for i, h := range r.Hops {
		closed := h.TimeWaitClient + h.TimeWaitServer - h.TimeWaitBoth
		if closed == 0 || i >= len(names) || i == 2 { // redis-py always closes first: no race
			continue
		}
		rs := RaceShare{Hop: names[i], Closes: closed,
			Server: round3(float64(h.TimeWaitServer-h.TimeWaitBoth) / float64(closed)),
			Both:   round3(float64(h.TimeWaitBoth) / float64(closed)),
			Client: round3(float64(h.TimeWaitClient-h.TimeWaitBoth) / float64(closed))}
		if s != nil && i < len(s.Tiers) {
			if p, ok := sim.Software[s.Tiers[i].Software]; ok {
				for _, st := range p.Settings {
					switch st.Key {
					case "server_closes_first":
						rs.Preset[0], _ = st.Value.(float64)
					case "simultaneous_close":
						rs.Preset[1], _ = st.Value.(float64)
					}
				}
			}
		}
		out = append(out, rs)
	}
	return out
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// isStack reports whether the plan runs on the real stack.
func (p *Plan) isStack() bool {
	return slices.ContainsFunc(p.Variants, func(vp *VariantPlan) bool { return vp.Stack != nil })
}

// validateStack runs a stack block's variants for real, calibrates the
// model on their calibration windows, and compares each variant's measured
// window with the model's; a variant outside tolerance runs again up to
// retries times (with a calibration window of its own, so the costs are
// fitted again).
func validateStack(ctx context.Context, p *Plan, opt Options, retries int) (*BlockValidation, error) {
	b := p.Block
	bv := &BlockValidation{ID: b.ID, Title: b.Title, Setup: p.Setup, OK: true, Tolerance: StackTolerance}
	run, err := RunPlan(ctx, p, opt)
	if err != nil {
		return nil, err
	}
	vcs := make([]*VariantComparison, len(p.Variants))
	attempts := make([]int, len(p.Variants))
	for attempt := 0; ; attempt++ {
		model, err := run.Model(ctx, opt.Seed, nil)
		if err != nil {
			return nil, err
		}
		var again []int
		for i, vp := range p.Variants {
			if vcs[i] != nil && vcs[i].OK {
				continue
			}
			attempts[i]++
			vc := &VariantComparison{Name: vp.Name, Label: vp.Label, Scaling: vp.Scaling, Phases: []PhaseRow{}, Attempts: attempts[i],
				Settings: b.Settings(b.Variant(vp.Name))}
			info := run.Variants[i]
			vc.Components, vc.Notes = info.Components, info.Notes
			vc.Setup, vc.Runtime = info.Setup, info.Runtime
			if vp.Rejected != "" {
				vc.OK, vc.Skipped = true, "rejected before any traffic: "+vp.Rejected
			} else {
				compareChain(vc, model.Variants[i], run.Result.Variants[i], info)
				vc.judge(info.Share, info.Stack)
			}
			vcs[i] = vc
			if !vc.OK && vc.Skipped == "" {
				again = append(again, i)
			}
		}
		bv.Calibration = run.StackCosts
		if len(again) == 0 || attempt >= retries {
			break
		}
		sub := &Plan{Block: p.Block, Setup: p.Setup, Compress: p.Compress}
		var names []string
		for _, i := range again {
			sub.Variants = append(sub.Variants, p.Variants[i])
			names = append(names, p.Variants[i].Name)
		}
		if opt.Progress != nil {
			opt.Progress(fmt.Sprintf("%s: %s outside tolerance, running again", b.ID, strings.Join(names, ", ")))
		}
		rerun, err := RunPlan(ctx, sub, opt)
		if err != nil {
			return nil, err
		}
		for k, i := range again {
			run.Variants[i], run.Result.Variants[i] = rerun.Variants[k], rerun.Result.Variants[k]
		}
	}
	bv.Variants = vcs
	for _, vc := range vcs {
		bv.OK = bv.OK && vc.OK
	}
	return bv, nil
}
