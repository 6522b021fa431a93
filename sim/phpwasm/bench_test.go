package phpwasm

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkReusedCall measures what a PHP 8.5 (WebAssembly) worker costs
// for one call on a reused connection, with no round trip and no server
// work: curl's own total for the call (µs-call-median, comparable with
// sim/harness's BenchmarkReusedCall for the Go worker), and one whole
// request through the driver (php.run's request startup and shutdown, the
// script, the line protocol: µs-request-median).
//
// clamp=true keeps Node's 1 ms minimum for setTimeout(0), with which
// php-wasm yields before every wait.
func BenchmarkReusedCall(b *testing.B) {
	for _, clamp := range []bool{false, true} {
		b.Run(map[bool]string{false: "yield=immediate", true: "yield=timeout0"}[clamp], func(b *testing.B) { benchReused(b, clamp) })
	}
}

func benchReused(b *testing.B, clamp bool) {
	c := newCerts(b)
	up := startUpstream(b, c, 0)
	s := scenario("process", 1)
	s.DNS = 0
	p := startDriver(b, c, up, opts{script: must(filepath.Abs(must(ScriptFor(labDir, "persistent", &s)))), scenario: s, warm: true, clamp: clamp})
	for r := 1; r <= 20; r++ { // the connection, and the code's tier-up
		p.serve(r)
	}
	calls := make([]time.Duration, 0, b.N)
	reqs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st := time.Now()
		cs := p.serve(21 + i)
		reqs = append(reqs, time.Since(st))
		if len(cs) != 1 || cs[0].NC || cs[0].ER != "" {
			b.Fatalf("request %d: %+v, want one reused call", i, cs)
		}
		calls = append(calls, time.Duration(cs[0].T))
	}
	b.StopTimer()
	p.exit()
	slices.Sort(calls)
	slices.Sort(reqs)
	b.ReportMetric(float64(calls[len(calls)/2].Microseconds()), "µs-call-median")
	b.ReportMetric(float64(calls[len(calls)*9/10].Microseconds()), "µs-call-p90")
	b.ReportMetric(float64(reqs[len(reqs)/2].Microseconds()), "µs-request-median")
}
