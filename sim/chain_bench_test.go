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
