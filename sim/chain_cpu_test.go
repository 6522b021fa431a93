package sim

import (
	"math"
	"strings"
	"testing"
)

// TestChainCPUsUnlimited: cpus = 0 is the model without shared CPUs, and
// enough CPUs for every process change nothing.
func TestChainCPUsUnlimited(t *testing.T) {
	base := runChainT(t, stackScenario(t), nil)
	s := stackScenario(t)
	set(t, &s, "cpus", 64)
	wide := runChainT(t, s, nil)
	if d := math.Abs(wide.ThroughputRPS-base.ThroughputRPS) / base.ThroughputRPS; d > 0.001 {
		t.Errorf("64 CPUs: %.1f req/s, without shared CPUs %.1f", wide.ThroughputRPS, base.ThroughputRPS)
	}
}

// TestChainCPUsShared: on one CPU every tier's work queues for it, so the
// throughput is one request per the sum of all tiers' work per request
// (processor sharing keeps the CPU busy whenever anything runs); other
// programs taking half of it halve the throughput.
func TestChainCPUsShared(t *testing.T) {
	s := stackScenario(t)
	set(t, &s, "tier.nginx.reuse", "upstream-keepalive", "tier.app.reuse", "pool", "cpus", 1)
	sum := runChainT(t, s, nil)
	// nginx 0.06 + app 0.55 + redis 2 × 0.015 per request, kept connections.
	perReq := 0.06 + 0.55 + 2*0.015
	if got, want := sum.ThroughputRPS, 1000/perReq; math.Abs(got-want)/want > 0.02 {
		t.Errorf("one CPU: %.1f req/s, want %.1f", got, want)
	}
	set(t, &s, "cpu_background", 0.5)
	half := runChainT(t, s, nil)
	if got, want := half.ThroughputRPS, 500/perReq; math.Abs(got-want)/want > 0.02 {
		t.Errorf("half a CPU left: %.1f req/s, want %.1f", got, want)
	}
	// The tiers' work per request stays what it is: waiting for a CPU
	// is not work.
	if w := half.Tier["app"].WorkMS; math.Abs(w-0.55) > 0.001 {
		t.Errorf("app work %.3f ms per request", w)
	}
}

// TestChainCPUsTwo: with two CPUs the app's one process, 0.55 ms per
// request, still has a CPU of its own most of the time; the others' work
// (0.09 ms per request) shares the second one. The app slows down only
// when nginx, Redis and the load all want a CPU beside it.
func TestChainCPUsTwo(t *testing.T) {
	s := stackScenario(t)
	set(t, &s, "tier.nginx.reuse", "upstream-keepalive", "tier.app.reuse", "pool", "cpus", 2)
	sum := runChainT(t, s, nil)
	max := 1000 / 0.55
	if sum.ThroughputRPS > max*1.001 || sum.ThroughputRPS < max*0.8 {
		t.Errorf("two CPUs: %.1f req/s, want a little under %.1f", sum.ThroughputRPS, max)
	}
	// The load generator's own work per request competes too.
	set(t, &s, "load_cpu", "0.3ms")
	busy := runChainT(t, s, nil)
	if busy.ThroughputRPS >= sum.ThroughputRPS {
		t.Errorf("with the load's CPU: %.1f req/s, without %.1f", busy.ThroughputRPS, sum.ThroughputRPS)
	}
}

// TestChainLoadCPU: without shared CPUs, the load's turn delays each
// request by load_cpu, and nothing else: a user alone waits for it once
// per request.
func TestChainLoadCPU(t *testing.T) {
	s := stackScenario(t)
	set(t, &s, "concurrency", 1, "tier.nginx.reuse", "upstream-keepalive", "tier.app.reuse", "pool")
	base := runChainT(t, s, nil)
	set(t, &s, "load_cpu", "1ms")
	slow := runChainT(t, s, nil)
	perBase := 1000 / base.ThroughputRPS
	perSlow := 1000 / slow.ThroughputRPS
	if d := perSlow - perBase; math.Abs(d-1) > 0.01 {
		t.Errorf("load_cpu 1ms added %.3f ms per request", d)
	}
	// The response time counts from the user's turn.
	if d := slow.Response.P50 - base.Response.P50; math.Abs(d-1) > 0.01 {
		t.Errorf("response p50 %.3f vs %.3f", slow.Response.P50, base.Response.P50)
	}
}

// TestChainCPUKeysChecked: the machine's keys are the chain's: refused on
// a block without tiers, and background must leave some CPU.
func TestChainCPUKeysChecked(t *testing.T) {
	for _, c := range []struct {
		kv   []any
		want string
	}{
		{[]any{"cpus", 2}, "cpus: shared CPUs are modelled for a block with [[tier]] tables only"},
		{[]any{"load_cpu", "1ms"}, "load_cpu:"},
	} {
		s := Default()
		set(t, &s, c.kv...)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.kv, err, c.want)
		}
	}
	s := stackScenario(t)
	set(t, &s, "cpus", 2, "cpu_background", 2.0)
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "cpu_background") {
		t.Errorf("background of all CPUs: %v", err)
	}
	s = stackScenario(t)
	set(t, &s, "cpu_background", 0.5)
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "set cpus") {
		t.Errorf("background without cpus: %v", err)
	}
	s = stackScenario(t)
	if err := s.Set("tier.app.cpus", 2); err == nil || !strings.Contains(err.Error(), "set it on the block") {
		t.Errorf("cpus on a tier: %v", err)
	}
}

// TestChainLoadStallChurn: the load generator's stalls leave nginx's kept
// connections idle while their users cannot send again; with keepalive N
// below the connections idle at once, nginx closes the least recently
// used and opens new ones. Without stalls every user answers within a
// round trip and nothing churns; with them the churn falls as N grows,
// gradually, as long stalls (the tail) leave many idle at once.
func TestChainLoadStallChurn(t *testing.T) {
	churn := func(n int, stalls ...any) float64 {
		s := stackScenario(t)
		set(t, &s, "tier.nginx.reuse", "upstream-keepalive", "tier.nginx.upstream_keepalive", n, "tier.app.reuse", "pool", "duration", "5s")
		set(t, &s, stalls...)
		sum := runChainT(t, s, nil)
		return float64(sum.Hop["app"].Connects-25) / float64(sum.Requests)
	}
	if c := churn(1); c > 0.001 {
		t.Errorf("no stalls, keepalive 1: %.4f new connections per request", c)
	}
	prev := 1.0
	var got []float64
	for _, n := range []int{1, 2, 4, 8, 16} {
		c := churn(n, "load_stalls", 300.0, "load_stall", "0.75ms", "load_stall_p99", "15ms")
		got = append(got, c)
		if c > prev+1e-9 {
			t.Errorf("keepalive %d: %.4f new connections per request, more than with fewer kept", n, c)
		}
		prev = c
	}
	if got[0] < 0.05 || got[2] == 0 || got[len(got)-1] > got[0]/10 {
		t.Errorf("churn by keepalive 1..16: %v", got)
	}
	// Stalls of equal length (no tail) leave fewer idle at once.
	if c := churn(4, "load_stalls", 300.0, "load_stall", "0.75ms"); c >= got[2] {
		t.Errorf("keepalive 4: %.4f with equal stalls, %.4f with a tail", c, got[2])
	}
}
