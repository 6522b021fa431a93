package harness

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/stack"
)

// The model of a stack variant, given what calibration measured.

// StackModelInput is what a stack variant's model is given from
// measurement, and where each value comes from.
type StackModelInput struct {
	// Costs: each tier's CPU per request and per connection, fitted over
	// the calibration windows of every variant (stack.Calibrate).
	Costs *stack.Costs `json:"costs"`
	// CPUs: the machine's; Background: the CPUs other programs took during
	// this variant's measured window (not the stack's), given to the
	// model as cpu_background.
	CPUs       int     `json:"cpus"`
	Background float64 `json:"background_cpu"`
	// LoadStalls, LoadStallMS, LoadStallP99MS: how often the load
	// generator's process was held off the CPUs in this variant's measured
	// window, and for how long (median, 99th percentile): its users'
	// turnaround on a busy machine (load_stalls, load_stall,
	// load_stall_p99).
	LoadStalls     float64 `json:"load_stalls_per_s"`
	LoadStallMS    float64 `json:"load_stall_ms"`
	LoadStallP99MS float64 `json:"load_stall_p99_ms"`
	// Shares of the close race on each hop where connections end with
	// their exchange, measured in this variant's calibration window
	// (server_closes_first, simultaneous_close), by hop; absent where no
	// connection was closed in it (the software preset stays).
	Shares map[string][2]float64 `json:"shares,omitempty"`
	// WorkerShares: each worker process's part of its tier's work in this
	// variant's measured window, largest first, by tier (nginx, app):
	// the work follows the connections each process accepted and kept, so
	// the model's tier takes its connections by these (worker_shares).
	// Absent for a tier of one process.
	WorkerShares map[string][]float64 `json:"worker_shares,omitempty"`
}

// calibrated returns s with the measured inputs set: each tier's costs,
// the machine's CPUs and background, the load's CPU per request, the
// close-race shares, and how each tier's work was spread over its
// processes.
func calibrated(s sim.Scenario, in *StackModelInput) (sim.Scenario, error) {
	c := in.Costs
	set := func(key string, v any) error {
		if err := s.Set(key, v); err != nil {
			return fmt.Errorf("calibrated model: %w", err)
		}
		return nil
	}
	ms := func(x float64) string { return sim.FormatDuration(time.Duration(math.Round(x * 1e6))) }
	if err := set("cpus", in.CPUs); err != nil {
		return s, err
	}
	if err := set("cpu_background", math.Min(in.Background, float64(in.CPUs)-0.05)); err != nil {
		return s, err
	}
	if err := set("load_cpu", ms(c.LoadCPU)); err != nil {
		return s, err
	}
	if in.LoadStalls > 0 && in.LoadStallMS > 0 {
		for k, v := range map[string]any{"load_stalls": in.LoadStalls, "load_stall": ms(in.LoadStallMS), "load_stall_p99": ms(max(in.LoadStallMS, in.LoadStallP99MS))} {
			if err := set(k, v); err != nil {
				return s, err
			}
		}
	}
	for i, name := range s.TierNames() {
		tc := c.Tiers[stackTierRole(i)]
		if tc == nil {
			continue
		}
		p := "tier." + name + "."
		for k, v := range map[string]float64{"server_time": tc.ServerTime, "server_conn_time": tc.ServerConnTime, "client_conn_time": tc.ClientConnTime} {
			if err := set(p+k, ms(v)); err != nil {
				return s, err
			}
		}
		if ws := in.WorkerShares[stackTierRole(i)]; len(ws) > 0 {
			ws = ws[:min(len(ws), s.TierScenario(i).Workers)]
			if err := set(p+"worker_shares", ws); err != nil {
				return s, err
			}
		}
		if sh, ok := in.Shares[name]; ok {
			if err := set(p+"simultaneous_close", sh[1]); err != nil {
				return s, err
			}
			if err := set(p+"server_closes_first", sh[0]); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

// stackTierRole names tier i of a stack by what it is in package stack.
func stackTierRole(i int) string { return [...]string{"nginx", "app", "redis"}[i] }

// raceShares reads, for each hop of a measured window whose connections
// ended in it, the share closed first by the accepting side alone and the
// share closed by both at once (a TIME_WAIT socket on each side).
func raceShares(r *stack.Result, names []string) map[string][2]float64 {
	out := map[string][2]float64{}
	for i, h := range r.Hops {
		closed := h.TimeWaitClient + h.TimeWaitServer - h.TimeWaitBoth
		if closed < 20 || i >= len(names) || i == len(r.Hops)-1 { // redis-py closes first: no race on the last hop
			continue
		}
		srv := float64(h.TimeWaitServer-h.TimeWaitBoth) / float64(closed)
		both := float64(h.TimeWaitBoth) / float64(closed)
		out[names[i]] = [2]float64{math.Round(srv*1000) / 1000, math.Round(both*1000) / 1000}
	}
	return out
}

// windowSummary runs the model on s (warm-up and every slice, as the real
// run) and summarises the measured window, made of slices [from, to):
// requests answered in it, connections opened and TIME_WAIT sockets
// entered on each hop, the response times. The tiers' utilisation is the
// whole run's.
func windowSummary(ctx context.Context, s sim.Scenario, slices [][2]time.Duration, seed uint64, fwd func(*sim.Event)) (*sim.Summary, map[string]float64, error) {
	names := s.TierNames()
	hops := make([]sim.HopSummary, len(names))
	var lat []float64
	failed := 0
	sliceOf := func(at time.Duration) int {
		for i, sl := range slices {
			if at >= sl[0] && at < sl[1] {
				return i
			}
		}
		return -1
	}
	in := func(at time.Duration) bool { return sliceOf(at) >= 0 }
	// The real run counts the TIME_WAIT sockets that appeared in a slice
	// and were still there at its end; one a new SYN took over (or
	// tcp_tw_reuse took back) within the same slice is not seen.
	type twKey struct {
		hop  uint8
		side sim.Side
		port int
	}
	twSlice := map[twKey]int{}
	sink := func(e *sim.Event) {
		if fwd != nil {
			fwd(e)
		}
		if !in(e.At) {
			if e.Kind == sim.KindTimeWaitEnd {
				delete(twSlice, twKey{e.Hop, e.By, e.LocalPort})
			}
			return
		}
		h := int(e.Hop) - 1
		switch e.Kind {
		case sim.KindRequest:
			if e.Error != "" {
				failed++
				return
			}
			lat = append(lat, float64(e.Total)/1e6)
		case sim.KindOpen:
			hops[h].Connects++
		case sim.KindCall:
			hops[h].Calls++
			if e.Reused {
				hops[h].Reused++
			}
		case sim.KindTimeWait:
			twSlice[twKey{e.Hop, e.By, e.LocalPort}] = sliceOf(e.At)
			if e.By == sim.SideServer {
				hops[h].TimeWaitServer++
			} else {
				hops[h].TimeWaitClient++
			}
		case sim.KindTimeWaitEnd:
			k := twKey{e.Hop, e.By, e.LocalPort}
			if sl, ok := twSlice[k]; ok && sl == sliceOf(e.At) {
				if e.By == sim.SideServer {
					hops[h].TimeWaitServer--
				} else {
					hops[h].TimeWaitClient--
				}
			}
			delete(twSlice, k)
		case sim.KindClose:
			switch {
			case e.Reason == sim.ReasonSimultaneous:
				hops[h].Simultaneous++
			case e.By == sim.SideServer:
				hops[h].ClosedByServer++
			default:
				hops[h].ClosedByClient++
			}
		}
	}
	r, err := sim.Run(ctx, s, sim.Options{Seed: seed, Sink: sink})
	if err != nil {
		return nil, nil, err
	}
	// Each tier's work per request of the load, over the whole run.
	cpu := map[string]float64{}
	for n, t := range r.Summary.Tier {
		if r.Summary.Requests > 0 {
			cpu[n] = math.Round(t.WorkMS*float64(t.Requests)/float64(r.Summary.Requests)*1000) / 1000
		}
	}
	sum := &sim.Summary{Chain: names, Hop: map[string]*sim.HopSummary{}, Tier: r.Summary.Tier,
		NumConnects: []int{}, ConnectsPerWorker: []int{}}
	for i, n := range names {
		h := hops[i]
		sum.Hop[n] = &h
		sum.Connects += h.Connects
		sum.Calls += h.Calls
		sum.Reused += h.Reused
		sum.TimeWaitPeak += h.TimeWaitClient
		sum.ServerTimeWaitPeak += h.TimeWaitServer
	}
	sum.Requests, sum.FailedRequests = len(lat)+failed, failed
	for _, sl := range slices {
		sum.DurationS += (sl[1] - sl[0]).Seconds()
	}
	sum.ThroughputRPS = math.Round(float64(len(lat))/sum.DurationS*10) / 10
	sum.Total = statOf(lat)
	sum.Response = sum.Total
	return sum, cpu, nil
}

// statOf is the percentiles of xs (ms), linear between ranks as the real
// load computes them.
func statOf(xs []float64) sim.Stat {
	if len(xs) == 0 {
		return sim.Stat{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pct := func(p float64) float64 {
		pos := p * float64(len(s)-1)
		i := int(pos)
		if i+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[i] + (pos-float64(i))*(s[i+1]-s[i])
	}
	mean := 0.0
	for _, x := range s {
		mean += x
	}
	r3 := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	return sim.Stat{P50: r3(pct(0.5)), P90: r3(pct(0.9)), P99: r3(pct(0.99)), Mean: r3(mean / float64(len(s)))}
}

// measuredSummary puts a real stack window in the model's shape, so that
// expectations and comparisons read both alike.
func measuredSummary(r *stack.Result, names []string, workers []int) *sim.Summary {
	sum := &sim.Summary{Chain: names, Hop: map[string]*sim.HopSummary{}, Tier: map[string]*sim.TierSummary{},
		NumConnects: []int{}, ConnectsPerWorker: []int{}}
	for i, h := range r.Hops {
		if i >= len(names) {
			break
		}
		hs := &sim.HopSummary{Connects: int(max(0, h.Connects)), TimeWaitClient: h.TimeWaitClient, TimeWaitServer: h.TimeWaitServer,
			Simultaneous: h.TimeWaitBoth, ClosedByServer: h.TimeWaitServer - h.TimeWaitBoth, ClosedByClient: h.TimeWaitClient - h.TimeWaitBoth,
			TimeWaitClientPeak: h.TimeWaitClient, TimeWaitServerPeak: h.TimeWaitServer,
			TimeWaitClientEnd: h.TimeWaitClient, TimeWaitServerEnd: h.TimeWaitServer, OpenPeak: h.OpenPeak}
		sum.Hop[names[i]] = hs
		sum.Connects += hs.Connects
		sum.TimeWaitPeak += h.TimeWaitClient
		sum.ServerTimeWaitPeak += h.TimeWaitServer
		sum.OpenPeak += h.OpenPeak
	}
	for i, n := range names {
		role := stackTierRole(i)
		// The model's utilisation is per process: the share of each
		// worker's time spent working.
		procs := 1
		if i < len(workers) && workers[i] > 0 {
			procs = workers[i]
		}
		sum.Tier[n] = &sim.TierSummary{Requests: r.Requests - r.Errors, Utilisation: round3(r.Utilisation[role] / float64(procs)), WorkMS: r.CPUPerRequestMS[role]}
	}
	sum.Requests, sum.FailedRequests = r.Requests, r.Errors
	sum.ThroughputRPS = r.ThroughputRPS
	sum.DurationS = r.DurationS
	st := sim.Stat{P50: r.LatencyMS["p50"], P90: r.LatencyMS["p90"], P99: r.LatencyMS["p99"], Mean: r.LatencyMS["mean"]}
	sum.Total, sum.Response = st, st
	return sum
}
