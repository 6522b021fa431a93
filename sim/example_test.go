package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/connlab/connlab/sim"
)

// A scenario starts from the defaults and takes keys the way a lab's
// ```sim block writes them; a bad value is an error that names the key.
func ExampleScenario_Set() {
	s := sim.Default()
	if err := s.Set("rtt", "30ms"); err != nil {
		panic(err)
	}
	if err := s.Set("reuse", "process"); err != nil {
		panic(err)
	}
	fmt.Println(s.RTT, s.Reuse)
	fmt.Println(s.Set("rtt", 30))
	fmt.Println(s.Set("tls", "1.1"))
	// Output:
	// 30ms process
	// rtt: want a duration with its unit, e.g. "20ms", got 30
	// tls: want one of none, 1.2, 1.3, got "1.1"
}

// Run simulates a scenario in virtual time: ten requests to a server 20 ms
// away, where a persistent share handle keeps the connection between
// requests (reuse = "process"). Only the first call pays for DNS (10 ms),
// TCP (one round trip), TLS 1.3 (one round trip and 0.85 ms of RSA-2048
// handshake work); every call pays a round trip and 2 ms of server time.
func ExampleRun() {
	s := sim.Default()
	s.Requests = 10
	s.RTT = 20 * time.Millisecond
	s.DNS = 10 * time.Millisecond
	s.ServerTime = 2 * time.Millisecond
	s.Reuse = "process"
	var first, second time.Duration
	r, err := sim.Run(context.Background(), s, sim.Options{Seed: 1, Sink: func(e *sim.Event) {
		if e.Kind != sim.KindCall {
			return
		}
		switch {
		case first == 0:
			first = e.Total
		case second == 0:
			second = e.Total
		}
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println("connects:", r.Summary.Connects, "num_connects:", r.Summary.NumConnects)
	fmt.Println("first call:", sim.FormatDuration(first), "second call:", sim.FormatDuration(second))
	// Output:
	// connects: 1 num_connects: [1 0 0 0 0 0 0 0 0 0]
	// first call: 72.85ms second call: 22ms
}

// Quantiles gives percentiles of a stream of durations; up to a few
// thousand values they are exact, interpolated between ranks: one slow
// call out of ten moves the mean and p99, not the median.
func ExampleQuantiles() {
	var q sim.Quantiles
	for _, ms := range []int{12, 14, 13, 93, 14, 15, 13, 14, 12, 16} {
		q.Add(time.Duration(ms) * time.Millisecond)
	}
	fmt.Println("count", q.Count(), "median", q.Quantile(0.5), "mean", q.Mean())
	st := q.Stat() // in ms, as sim run --json prints a phase
	fmt.Println("p50", st.P50, "p90", st.P90, "p99", st.P99, "mean", st.Mean)
	// Output:
	// count 10 median 14ms mean 21.6ms
	// p50 14 p90 23.7 p99 86.07 mean 21.6
}

// FormatDuration writes durations the way labs do, not as Go's String.
func ExampleFormatDuration() {
	for _, d := range []time.Duration{75 * time.Second, 90 * time.Second, 1500 * time.Microsecond, 250 * time.Microsecond, 2 * time.Hour, 0} {
		fmt.Printf("%-7v %s\n", d, sim.FormatDuration(d))
	}
	// Output:
	// 1m15s   75s
	// 1m30s   90s
	// 1.5ms   1.5ms
	// 250µs   250µs
	// 2h0m0s  2h
	// 0s      0s
}
