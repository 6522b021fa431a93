package sim

import (
	"testing"
)

// BenchmarkChain runs the three-tier stack (nginx → app → Redis) for one
// million requests without reuse on the two inner hops: three million
// calls, two million connections opened and closed, each into TIME_WAIT
// (tcp_tw_reuse on loopback keeps the ports coming), events aggregated
// not kept.
func BenchmarkChain(b *testing.B) {
	s := stackScenario(b)
	set(b, &s, "requests", 1_000_000, "duration", "0s", "tw_reuse", 2, "port_range", "32768-60999")
	benchRun(b, s)
}

// BenchmarkChainReuse is the same stack with nginx's keepalive and a
// Redis pool: the connections stay open.
func BenchmarkChainReuse(b *testing.B) {
	s := stackScenario(b)
	set(b, &s, "requests", 1_000_000, "duration", "0s",
		"tier.nginx.reuse", "upstream-keepalive", "tier.app.reuse", "pool")
	benchRun(b, s)
}

// BenchmarkChainShared is the stack as the nginx lab's whole-stack block
// runs it: keep-alive off, a Redis connection per request, the tiers and
// the load sharing two CPUs (processor sharing), the load generator's own
// CPU and its stalls.
func BenchmarkChainShared(b *testing.B) {
	s := stackScenario(b)
	set(b, &s, "requests", 1_000_000, "duration", "0s", "tw_reuse", 2, "port_range", "32768-60999",
		"cpus", 2, "cpu_background", 0.5, "load_cpu", "0.13ms", "load_stalls", 300.0, "load_stall", "0.7ms", "load_stall_p99", "15ms")
	benchRun(b, s)
}
