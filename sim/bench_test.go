package sim

import (
	"context"
	"testing"
	"time"
)

// benchScenario is one million requests over 50 workers, with keep-alive
// timeouts firing (think time beyond the server's timeout for some users),
// connections recycled by keepalive_requests, and every port tracked.
func benchScenario() Scenario {
	s := Default()
	s.Requests = 1_000_000
	s.Workers = 50
	s.Concurrency = 50
	s.Reuse = "process"
	s.RTT = time.Millisecond
	s.DNS = time.Millisecond
	s.ServerTime = time.Millisecond
	s.ThinkTime = 10 * time.Millisecond
	s.PauseEvery = 100
	s.Pause = 80 * time.Second // past nginx's 75 s: every 100th call reconnects
	return s
}

// BenchmarkEngine reports engine events per second on one goroutine and
// allocations per run of one million requests, events aggregated not kept.
func BenchmarkEngine(b *testing.B) { benchRun(b, benchScenario()) }

// BenchmarkEngineNoReuse is the port-heavy case: a new connection, a close
// and a TIME_WAIT for each of one million calls.
func BenchmarkEngineNoReuse(b *testing.B) {
	s := benchScenario()
	s.Reuse = "none"
	s.ThinkTime = 100 * time.Millisecond
	s.PauseEvery = 0
	benchRun(b, s)
}

// BenchmarkSimPyScenario is the scenario a SimPy model of the same system
// would be written for (PEERS.md): 60 users, 50 worker processes each
// keeping a pool, a 30 ms round trip to the upstream, one million
// requests: its events a second set the model's speed against a
// general-purpose simulator's.
func BenchmarkSimPyScenario(b *testing.B) {
	s := Default()
	s.Requests = 1_000_000
	s.Concurrency = 60
	s.Workers = 50
	s.Reuse = "pool"
	s.RTT = 30 * time.Millisecond
	s.DNS = 0
	s.ServerTime = time.Millisecond
	benchRun(b, s)
}

func benchRun(b *testing.B, s Scenario) {
	b.ReportAllocs()
	var events int64
	var elapsed time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := Run(context.Background(), s, Options{Seed: 1})
		elapsed += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if res.Summary.Requests != s.Requests {
			b.Fatalf("%d requests", res.Summary.Requests)
		}
		events += res.EngineEvents
	}
	b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/run")
}

// BenchmarkRunSmall is one small variant (ten requests, one connection), as
// a lab of many variants runs it: what setting up a run costs.
func BenchmarkRunSmall(b *testing.B) {
	s := Default()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), s, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
