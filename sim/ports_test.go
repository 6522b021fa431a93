package sim

import (
	"context"
	"testing"
)

// TestTimeWaitReused: the summary counts the TIME_WAIT ports connect() took
// over, with or without an event sink, and in a run shorter than TIME_WAIT
// every closed connection is either still in TIME_WAIT or was taken over.
func TestTimeWaitReused(t *testing.T) {
	s := base()
	s.Reuse = "none"
	s.Load = "open"
	s.Rate = 1
	s.Requests = 10
	s.PortRange = PortRange{40000, 40003} // two even ports, two odd
	s.TWReuse = 1
	res, evs := run(t, s)
	sum := res.Summary
	// 40000 and 40002 first; from 2 s on, each connect takes over the
	// oldest TIME_WAIT socket, closed 2 s earlier.
	if sum.TimeWaitReused != 8 || sum.TimeWaitPeak != 2 || sum.PortErrors != 0 {
		t.Errorf("time_wait_reused %d, time_wait_peak %d, port_errors %d: want 8, 2, 0", sum.TimeWaitReused, sum.TimeWaitPeak, sum.PortErrors)
	}
	if n := count(evs, KindTimeWaitEnd, "client", "reused"); n != sum.TimeWaitReused {
		t.Errorf("%d reused events, summary %d", n, sum.TimeWaitReused)
	}
	if sum.TimeWaitPeak+sum.TimeWaitReused != sum.Connects {
		t.Errorf("time_wait_peak %d + time_wait_reused %d != connects %d", sum.TimeWaitPeak, sum.TimeWaitReused, sum.Connects)
	}
	quiet, err := Run(context.Background(), s, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if quiet.Summary.TimeWaitReused != sum.TimeWaitReused {
		t.Errorf("without a sink: time_wait_reused %d, want %d", quiet.Summary.TimeWaitReused, sum.TimeWaitReused)
	}
	// Without tcp_tw_reuse nothing is taken over: the odd ports, then
	// EADDRNOTAVAIL.
	s.TWReuse = 0
	if res, _ := run(t, s); res.Summary.TimeWaitReused != 0 || res.Summary.PortErrors != 6 {
		t.Errorf("tw_reuse 0: time_wait_reused %d, port_errors %d: want 0, 6", res.Summary.TimeWaitReused, res.Summary.PortErrors)
	}
	// The lab's loopback variant, scaled as sim validate runs it: 2,000
	// connections over 28,232 ports, none taken over in the model.
	s = base()
	s.Reuse, s.Load, s.Rate, s.Requests, s.Threads, s.Loopback = "none", "open", 200, 2000, 0, true
	if res, _ := run(t, s); res.Summary.TimeWaitReused != 0 || res.Summary.TimeWaitPeak != 2000 {
		t.Errorf("2000 connections: time_wait_reused %d, time_wait_peak %d: want 0, 2000", res.Summary.TimeWaitReused, res.Summary.TimeWaitPeak)
	}
}
