package harness

import (
	"slices"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/stack"
	"github.com/connlab/connlab/sim/harness/wire"
	"github.com/connlab/connlab/sim/lab"
)

// TestVerdicts: the three outcomes of a real run, from the comparison's
// rows and the machine's share during it, with the busy signal forced (a
// share of other programs' CPU) or not.
func TestVerdicts(t *testing.T) {
	model := &sim.Summary{Requests: 10, Calls: 10, Connects: 1, Total: sim.Stat{P50: 20}}
	slower := &sim.Summary{Requests: 10, Calls: 10, Connects: 1, Total: sim.Stat{P50: 26}} // 30 % over
	quicker := &sim.Summary{Requests: 10, Calls: 10, Connects: 1, Total: sim.Stat{P50: 14}}
	right := &sim.Summary{Requests: 10, Calls: 10, Connects: 1, Total: sim.Stat{P50: 20.2}}
	moreConns := &sim.Summary{Requests: 10, Calls: 10, Connects: 2, Total: sim.Stat{P50: 20.2}}
	busy := &wire.Share{WallMS: 1000, RunCPUMS: 100, Procs: 3, OthersCPUMS: 1800, OthersProcs: 2, OthersCPUs: 1.8}
	quiet := &wire.Share{WallMS: 1000, RunCPUMS: 100, Procs: 3, OthersCPUMS: 30, OthersProcs: 3, OthersCPUs: 0.03}
	// A short run whose "others" are within the ticks' resolution.
	short := &wire.Share{WallMS: 100, RunCPUMS: 40, Procs: 3, OthersCPUMS: 40, OthersProcs: 4, OthersCPUs: 0.4}
	cases := []struct {
		name     string
		measured *sim.Summary
		share    *wire.Share
		timing   bool
		want     string
		says     string
	}{
		{"right, quiet", right, quiet, false, VerdictAgree, ""},
		{"right, busy", right, busy, false, VerdictAgree, ""},
		{"slower, quiet", slower, quiet, false, VerdictDisagree, ""},
		{"slower, share unknown", slower, nil, false, VerdictDisagree, ""},
		{"slower, busy", slower, busy, false, VerdictInconclusive, "other programs used 1.80 CPUs"},
		{"slower, others within the ticks", slower, short, false, VerdictDisagree, ""},
		{"quicker, busy", quicker, busy, false, VerdictDisagree, "a busy machine only adds time"},
		{"quicker within the measured costs, busy", quicker, busy, false, VerdictInconclusive, "machine busy"},
		{"a connection more, busy", moreConns, busy, false, VerdictDisagree, "does not depend on how busy"},
		{"a connection more, timing variant, busy", &sim.Summary{Requests: 10, Calls: 10, Connects: 5, Total: sim.Stat{P50: 20.2}}, busy, true, VerdictInconclusive, "machine busy"},
		// A request that met the server's close retried on a new
		// connection: which side of the close it landed on is timing.
		{"a race more, busy", &sim.Summary{Requests: 10, Calls: 10, Connects: 2, Races: 1, Total: sim.Stat{P50: 20.2}}, busy, false, VerdictInconclusive, "machine busy"},
		{"a race more, quiet", &sim.Summary{Requests: 10, Calls: 10, Connects: 2, Races: 1, Total: sim.Stat{P50: 20.2}}, quiet, false, VerdictDisagree, ""},
	}
	for _, c := range cases {
		vc := &VariantComparison{Name: "v", Model: model, Measured: c.measured}
		if strings.Contains(c.name, "measured costs") {
			vc.MeasuredCostMS = 6 // the model given 6 ms of CPU a call measured on the busy machine
		}
		vc.Phases = ComparePhases(model, c.measured, DefaultTolerance)
		vc.Counts = CompareCounts(model, c.measured, c.timing, false, false)
		vc.OK = true
		for _, p := range vc.Phases {
			vc.OK = vc.OK && p.OK
		}
		for _, r := range vc.Counts {
			vc.OK = vc.OK && r.OK
		}
		vc.judge(c.share, nil)
		if vc.Verdict != c.want {
			t.Errorf("%s: verdict %s (%s%s), want %s", c.name, vc.Verdict, vc.Inconclusive, vc.Why, c.want)
			continue
		}
		if got := vc.Inconclusive + vc.Why; !strings.Contains(got, c.says) {
			t.Errorf("%s: %q, want it to say %q", c.name, got, c.says)
		}
		if (vc.Verdict == VerdictAgree) != vc.OK {
			t.Errorf("%s: OK %v with verdict %s", c.name, vc.OK, vc.Verdict)
		}
	}
}

// TestVerdictsStack: a stack variant's window that missed is inconclusive
// when other programs took a share of the machine in it or in its
// calibration window, unless its counts miss per request as well.
func TestVerdictsStack(t *testing.T) {
	model := &sim.Summary{Requests: 1000, ThroughputRPS: 500}
	row := func(metric string, m, r float64) ChainRow {
		ok := r >= m*0.85 && r <= m*1.15
		return ChainRow{Hop: "app", Metric: metric, Model: m, Measured: r, Allowed: "±15%", OK: ok}
	}
	// perCall: the hop's connecting side keeps no connection.
	perCall := func(c ChainRow) ChainRow { c.perCall = true; return c }
	busyWindow := &stack.Result{BackgroundCPU: 1.6, MachineCPUMS: 3000, DurationS: 2}
	busyCalibration := &stack.Result{BackgroundCPU: 0.05, Calibration: &stack.Result{BackgroundCPU: 1.2, DurationS: 1}}
	quietWindow := &stack.Result{BackgroundCPU: 0.08, Calibration: &stack.Result{BackgroundCPU: 0.1}}
	cases := []struct {
		name     string
		requests int
		rows     []ChainRow
		st       *stack.Result
		want     string
	}{
		// Fewer requests in the window, connects in proportion.
		{"slower, busy", 700, []ChainRow{row("throughput_rps", 500, 350), perCall(row("connects", 1000, 700))}, busyWindow, VerdictInconclusive},
		{"slower, calibration busy", 700, []ChainRow{row("throughput_rps", 500, 350), perCall(row("connects", 1000, 700))}, busyCalibration, VerdictInconclusive},
		{"slower, quiet", 700, []ChainRow{row("throughput_rps", 500, 350), perCall(row("connects", 1000, 700))}, quietWindow, VerdictDisagree},
		// A connection more per request: off per request as well.
		{"a connection more a request, busy", 700, []ChainRow{row("throughput_rps", 500, 350), perCall(row("connects", 1000, 1400))}, busyWindow, VerdictDisagree},
		// The model keeps connections where the real hop opens one a
		// request.
		{"no reuse where the model keeps them, busy", 700, []ChainRow{row("throughput_rps", 500, 350), row("connects", 200, 700)}, busyWindow, VerdictDisagree},
		// A hop that keeps its connections grew its pool more under
		// stalls (stack-connections/tiers: 0.215 a request in the model,
		// 0.274 measured on a busy machine).
		{"a kept hop's pool grew, busy", 975, []ChainRow{row("throughput_rps", 500, 487), row("connects", 215, 267)}, busyWindow, VerdictInconclusive},
		{"a kept hop's pool grew, quiet", 975, []ChainRow{row("throughput_rps", 500, 487), row("connects", 215, 267)}, quietWindow, VerdictDisagree},
		// A kept hop whose pool is smaller than its concurrency opens
		// nearly one a request in the model; how many overlap moves
		// on a busy machine (stack-connections/tiers: 1931 in the model,
		// 1392 measured at a throughput within tolerance).
		{"a small pool's churn moved, busy", 1000, []ChainRow{row("throughput_rps", 500, 480), row("connects", 965, 696)}, busyWindow, VerdictInconclusive},
		{"a small pool's churn moved, quiet", 1000, []ChainRow{row("throughput_rps", 500, 480), row("connects", 965, 696)}, quietWindow, VerdictDisagree},
		// The same miss where the hop opens one a call is the model's.
		{"a per-call hop off per request, busy", 1000, []ChainRow{row("throughput_rps", 500, 480), perCall(row("connects", 1000, 696))}, busyWindow, VerdictDisagree},
		// Each side's TIME_WAIT is a close race: it may move.
		{"the close race moved, busy", 1000, []ChainRow{row("throughput_rps", 500, 500), {Hop: "app", Side: "server", Metric: "time_wait", Model: 300, Measured: 420, Allowed: "±15%"}}, busyWindow, VerdictInconclusive},
		// The calibration window busier than the measured one: the model,
		// fitted to it, is the slower.
		{"quicker, calibration busy", 1300, []ChainRow{row("throughput_rps", 500, 650), perCall(row("connects", 1000, 1300))}, busyCalibration, VerdictInconclusive},
		{"quicker, quiet", 1300, []ChainRow{row("throughput_rps", 500, 650), perCall(row("connects", 1000, 1300))}, quietWindow, VerdictDisagree},
	}
	for _, c := range cases {
		vc := &VariantComparison{Name: "v", Model: model, Measured: &sim.Summary{Requests: c.requests}, Chain: &ChainComparison{Rows: c.rows}}
		vc.OK = true
		for _, r := range c.rows {
			vc.OK = vc.OK && r.OK
		}
		vc.judge(nil, c.st)
		if vc.Verdict != c.want {
			t.Errorf("%s: verdict %s (%s%s), want %s", c.name, vc.Verdict, vc.Inconclusive, vc.Why, c.want)
		}
	}
}

// opensPerCall reads the model's scenario: the first hop opens one a call
// when the load keeps none (siege's connection = close), a later hop when
// the tier before it keeps none.
func TestOpensPerCall(t *testing.T) {
	sc := sim.Default()
	for _, n := range []string{"nginx", "app", "redis"} {
		if err := sc.AddTier(n); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string]any{"client_keepalive": false, "tier.nginx.reuse": "upstream-keepalive", "tier.app.reuse": "none"} {
		if err := sc.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	got := []bool{opensPerCall(&sc, 0), opensPerCall(&sc, 1), opensPerCall(&sc, 2), opensPerCall(nil, 0)}
	if want := []bool{true, false, true, false}; !slices.Equal(got, want) {
		t.Errorf("opensPerCall per hop = %v, want %v", got, want)
	}
	sc.Set("client_keepalive", true)
	if opensPerCall(&sc, 0) {
		t.Error("the first hop opens one a call with client_keepalive")
	}
}

// overlapCounts: nginx's idle cache smaller than the requests at once
// leaves hop app's counts uncompared; a pool per process bounds hop
// redis's new connections by workers × threads.
func TestOverlapCounts(t *testing.T) {
	sc := sim.Default()
	for _, n := range []string{"nginx", "app", "redis"} {
		sc.AddTier(n)
	}
	for k, v := range map[string]any{"concurrency": 60, "tier.nginx.reuse": "upstream-keepalive", "tier.nginx.upstream_keepalive": 8,
		"tier.nginx.workers": 2, "tier.app.reuse": "pool", "tier.app.workers": 4, "tier.app.threads": 4} {
		if err := sc.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if why, _ := overlapCounts(&sc, 1); !strings.Contains(why, "8 idle connections per worker (16 in all) for up to 60 requests") {
		t.Errorf("hop app: %q", why)
	}
	if why, bound := overlapCounts(&sc, 2); why != "" || bound != 16 {
		t.Errorf("hop redis: %q, bound %d; want 16", why, bound)
	}
	sc.Set("concurrency", 16)
	if why, _ := overlapCounts(&sc, 1); why != "" {
		t.Errorf("a cache as large as the requests at once: %q", why)
	}
}

// TestOverlapThroughput: where nginx closes connections beyond its idle
// cache after each answer, the throughput, which pays for opening them
// again, is shown with the reason and not held to 15 %; with a cache as
// large as the requests at once, it is held.
func TestOverlapThroughput(t *testing.T) {
	sc := sim.Default()
	for _, n := range []string{"nginx", "app", "redis"} {
		sc.AddTier(n)
	}
	for k, v := range map[string]any{"concurrency": 60, "tier.nginx.reuse": "upstream-keepalive", "tier.nginx.upstream_keepalive": 8, "tier.nginx.workers": 2} {
		if err := sc.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	sum := func(rps float64, connects int) *sim.Summary {
		return &sim.Summary{ThroughputRPS: rps, Chain: []string{"nginx", "app"},
			Hop: map[string]*sim.HopSummary{"nginx": {}, "app": {Connects: connects}}}
	}
	compare := func() map[string]ChainRow {
		vc := &VariantComparison{}
		compareChain(vc, &lab.VariantResult{Summary: sum(2500, 1900), Scenario: &sc}, &lab.VariantResult{Summary: sum(1800, 1300)}, &VariantRun{})
		rows := map[string]ChainRow{}
		for _, r := range vc.Chain.Rows {
			rows[r.Hop+"/"+r.Metric] = r
		}
		if vc.OK != (rows["/throughput_rps"].Allowed == "not compared") {
			t.Errorf("ok %v with throughput %+v", vc.OK, rows["/throughput_rps"])
		}
		return rows
	}
	if r := compare()["/throughput_rps"]; !r.OK || !strings.Contains(r.Note, "follows how the requests overlap too: nginx keeps 8 idle connections per worker") {
		t.Errorf("60 requests at once, 16 kept: %+v", r)
	}
	sc.Set("concurrency", 16)
	if r := compare()["/throughput_rps"]; r.OK || r.Note != "" || r.Allowed != "±15%" {
		t.Errorf("16 requests at once, 16 kept: %+v, want held to 15 %%", r)
	}
}
