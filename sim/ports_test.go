package sim

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// walker is a model with only its port space in use (a chain of one's
// hop): tests move its clock and take, close and expire ports by hand.
type walker struct {
	t   *testing.T
	m   *chainModel
	evs []Event
}

func newWalker(t *testing.T, r PortRange, twReuse bool, seed uint64) *walker {
	t.Helper()
	s := base()
	s.PortRange = r
	s.TWReuse = 0
	if twReuse {
		s.TWReuse = 1
	}
	w := &walker{t: t}
	w.m = newChain(s, Options{Seed: seed, Sink: func(e *Event) { w.evs = append(w.evs, *e) }})
	return w
}

// connect takes a port at time at; 0 for EADDRNOTAVAIL.
func (w *walker) connect(at time.Duration) int {
	w.m.now = at
	p, ok := w.m.allocPort(1)
	if !ok {
		return 0
	}
	return int(p)
}

// close puts the client's socket on port p in TIME_WAIT at time at.
func (w *walker) close(at time.Duration, p int) {
	w.m.now = at
	w.m.enterTimeWait(1, sideClient, int32(p))
}

func (w *walker) reused() int { return count(w.evs, KindTimeWaitEnd, "client", "reused") }

// diff is how far port b lies past port a in a range of n ports, wrapping.
func diff(a, b, n int) int { return ((b-a)%n + n) % n }

// TestPortWalkEvenFirstRandomSteps: within one 10 s period, connect()
// tries the even ports first, and each search starts 2 to 16 ports past
// the last start (max(i, 2·rand(8)) + 2 with i = 0 on a free port), every
// step size showing up; the odd ports only once no even one is left, then
// EADDRNOTAVAIL. The same seed gives the same ports; another, others.
func TestPortWalkEvenFirstRandomSteps(t *testing.T) {
	r := PortRange{40000, 41999} // 1,000 even ports, 1,000 odd
	walk := func(seed uint64, n int) []int {
		w := newWalker(t, r, false, seed)
		var ps []int
		for range n {
			ps = append(ps, w.connect(0))
		}
		return ps
	}
	ps := walk(1, 2000)
	steps := map[int]int{}
	for i, p := range ps {
		even := p%2 == 0
		if i < 1000 && !even || i >= 1000 && even {
			t.Fatalf("connect %d took port %d: want the 1,000 even ports first, then the odd ones", i+1, p)
		}
		if i > 0 && i < 100 {
			steps[diff(ps[i-1], p, r.Size())]++
		}
	}
	for d := range steps {
		if d < 2 || d > 16 || d%2 != 0 {
			t.Errorf("the search moved on by %d ports: want 2, 4, … 16 (steps %v)", d, steps)
		}
	}
	if len(steps) != 8 {
		t.Errorf("steps %v: want all eight sizes within 99 connects", steps)
	}
	sorted := slices.Clone(ps)
	slices.Sort(sorted)
	if n := len(slices.Compact(sorted)); n != r.Size() {
		t.Errorf("%d distinct ports in 2,000 connects: want every port once", n)
	}
	w := newWalker(t, r, false, 1)
	for range 2000 {
		w.connect(0)
	}
	if p := w.connect(0); p != 0 {
		t.Errorf("range used up: got port %d, want EADDRNOTAVAIL", p)
	}
	if !slices.Equal(walk(1, 50), ps[:50]) {
		t.Error("the same seed took other ports")
	}
	if slices.Equal(walk(2, 50), ps[:50]) {
		t.Error("seeds 1 and 2 took the same ports")
	}
}

// TestPortWalkReshuffle: the start jumps to a random place every 10 s of
// simulated time, at instants exactly 10 s apart whose phase depends on the
// seed (the kernel's periods count from boot, not from the run).
func TestPortWalkReshuffle(t *testing.T) {
	r := Default().PortRange
	jumps := func(seed uint64) []time.Duration {
		w := newWalker(t, r, false, seed)
		var at []time.Duration
		last := 0
		for i := range 350 { // one connect every 100 ms for 35 s
			now := time.Duration(i) * 100 * ms
			p := w.connect(now)
			if p == 0 {
				t.Fatalf("EADDRNOTAVAIL at %v", now)
			}
			if i > 0 {
				if d := diff(last, p, r.Size()); d < 2 || d > 16 || d%2 != 0 {
					at = append(at, now)
				}
			}
			w.m.hops[1].search.free(p) // the server closes first: the port is free again
			last = p
		}
		return at
	}
	firsts := map[time.Duration]bool{}
	for seed := uint64(1); seed <= 5; seed++ {
		at := jumps(seed)
		if len(at) < 3 || len(at) > 4 || at[0] > 10*time.Second {
			t.Fatalf("seed %d: jumps at %v: want 3 or 4 in 35 s, the first within 10 s", seed, at)
		}
		for i := 1; i < len(at); i++ {
			if at[i]-at[i-1] != PortShufflePeriod {
				t.Errorf("seed %d: jumps at %v: want them 10 s apart", seed, at)
			}
		}
		firsts[at[0]] = true
	}
	if len(firsts) < 3 {
		t.Errorf("first jumps %v over five seeds: want the phase to vary", firsts)
	}
}

// TestPortWalkTakeover: with tcp_tw_reuse, a TIME_WAIT port is taken over
// once its socket has been in TIME_WAIT more than 1 s, and not before; the
// search takes it where it lands on it even with free ports about; without
// tcp_tw_reuse the search steps over it.
func TestPortWalkTakeover(t *testing.T) {
	r := PortRange{40000, 40001} // one even port, one odd
	w := newWalker(t, r, true, 1)
	steps := []struct {
		at     time.Duration
		want   int
		reused int
	}{
		{0, 40000, 0},
		{500 * ms, 40001, 0},  // 40000 is 0.5 s in TIME_WAIT: the odd port
		{1000 * ms, 0, 0},     // 40000 exactly 1 s: not more than 1 s
		{1001 * ms, 40000, 1}, // taken over
		{1200 * ms, 0, 1},     // both young: 0.2 s and 0.7 s in TIME_WAIT
		{1501 * ms, 40001, 2}, // taken over
		{1600 * ms, 0, 2},
	}
	for _, s := range steps {
		p := w.connect(s.at)
		if p != s.want || w.reused() != s.reused {
			t.Fatalf("tw_reuse 1 at %v: port %d, %d taken over: want %d, %d", s.at, p, w.reused(), s.want, s.reused)
		}
		if p != 0 {
			w.close(s.at, p)
		}
	}
	if w.m.hops[1].twLive[sideClient] != 2 || w.m.hops[1].twPeak[sideClient] != 2 {
		t.Errorf("TIME_WAIT %d, peak %d: want 2, 2", w.m.hops[1].twLive[sideClient], w.m.hops[1].twPeak[sideClient])
	}
	// At 60.01 s the first two entries (taken over) are due: dropped without
	// an expiry, while the sockets that took their ports stay.
	w.m.now = 60010 * ms
	w.m.timeWaitEnd(1, sideClient)
	if n := count(w.evs, KindTimeWaitEnd, "client", ""); n != 2 || w.m.hops[1].twLive[sideClient] != 2 {
		t.Errorf("after 60 s: %d time_wait_end events, %d in TIME_WAIT: want 2 (the takeovers), 2", n, w.m.hops[1].twLive[sideClient])
	}

	// Without tcp_tw_reuse: nothing is taken over until TIME_WAIT ends.
	w = newWalker(t, r, false, 1)
	for _, s := range []struct {
		at   time.Duration
		want int
	}{{0, 40000}, {500 * ms, 40001}, {1001 * ms, 0}, {59 * time.Second, 0}} {
		if p := w.connect(s.at); p != s.want {
			t.Fatalf("tw_reuse 0 at %v: port %d, want %d", s.at, p, s.want)
		}
		if s.want != 0 {
			w.close(s.at, s.want)
		}
	}
	w.m.now = 60 * time.Second
	w.m.timeWaitEnd(1, sideClient)
	if p := w.connect(60 * time.Second); p != 40000 || w.reused() != 0 {
		t.Errorf("tw_reuse 0 after 60 s: port %d, %d taken over: want 40000, 0", p, w.reused())
	}

	// Free ports about: the search lands on the TIME_WAIT port and takes it
	// over (tw_reuse 1), or steps past it to the next even port (0).
	for _, reuse := range []bool{true, false} {
		w = newWalker(t, PortRange{40000, 40063}, reuse, 1)
		p := w.connect(0)
		w.close(0, p)
		w.m.hops[1].search.shuffleAt = time.Hour
		w.m.hops[1].search.start = p - 40000
		want, reused := p, 1
		if !reuse {
			want, reused = 40000+(p-40000+2)%64, 0
		}
		if got := w.connect(1500 * ms); got != want || w.reused() != reused {
			t.Errorf("tw_reuse %v, 31 even ports free: port %d, %d taken over: want %d, %d", reuse, got, w.reused(), want, reused)
		}
	}
}

// TestPortWalkOddRange: the kernel rounds the range's size down to even, so
// a range of three ports hands out two; a range of one port, that one.
func TestPortWalkOddRange(t *testing.T) {
	w := newWalker(t, PortRange{40000, 40002}, false, 1)
	got := []int{w.connect(0), w.connect(0), w.connect(0)}
	if !slices.Equal(got, []int{40000, 40001, 0}) {
		t.Errorf("range 40000-40002: ports %v, want [40000 40001 0]", got)
	}
	w = newWalker(t, PortRange{40001, 40001}, false, 1)
	if got := []int{w.connect(0), w.connect(0)}; !slices.Equal(got, []int{40001, 0}) {
		t.Errorf("range 40001-40001: ports %v, want [40001 0]", got)
	}
}

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
	// even port closed 2 s earlier, the only one more than 1 s in TIME_WAIT.
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
	// connections in 10 s over 28,232 ports. Every one is still in
	// TIME_WAIT or was taken over; how many were taken over depends on
	// where the search lands after the 10 s reshuffle, so on the seed.
	s = base()
	s.Reuse, s.Load, s.Rate, s.Requests, s.Threads, s.Loopback = "none", "open", 200, 2000, 0, true
	taken := map[int]bool{}
	for seed := uint64(1); seed <= 8; seed++ {
		res, err := Run(context.Background(), s, Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		sum := res.Summary
		if sum.TimeWaitPeak+sum.TimeWaitReused != 2000 || sum.PortErrors != 0 {
			t.Errorf("seed %d: time_wait_peak %d + time_wait_reused %d, port_errors %d: want 2000, 0", seed, sum.TimeWaitPeak, sum.TimeWaitReused, sum.PortErrors)
		}
		taken[sum.TimeWaitReused] = true
	}
	if len(taken) < 3 {
		t.Errorf("ports taken over by seed: %v: want it to vary", taken)
	}
	s.TWReuse = 0
	if res, _ := run(t, s); res.Summary.TimeWaitReused != 0 || res.Summary.TimeWaitPeak != 2000 {
		t.Errorf("tw_reuse 0: time_wait_reused %d, time_wait_peak %d: want 0, 2000", res.Summary.TimeWaitReused, res.Summary.TimeWaitPeak)
	}
}

// TestPortsNext: the search over the busy bits and their summary finds the
// same port as a plain scan from the start, wrapping around, over ranges
// of many sizes and fillings.
func TestPortsNext(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, size := range []int{2, 3, 64, 127, 128, 129, 4096, 8192 + 130, 28232} {
		for _, fill := range []float64{0, 0.5, 0.99, 0.9999} {
			w := newWalker(t, PortRange{10000, 10000 + size - 1}, false, 1)
			port, _ := w.m.allocPort(1) // sets the range up
			p := &w.m.hops[1].search
			p.release(int(port)) // back to all free
			free := [2][]bool{make([]bool, p.half[0]), make([]bool, p.half[1])}
			for c := range 2 {
				for k := range p.half[c] {
					free[c][k] = true
					if rng.Float64() < fill {
						p.take(p.lo + 2*k + c)
						free[c][k] = false
					}
				}
			}
			for c := range 2 {
				if p.avail[c] == 0 {
					continue
				}
				for range 50 {
					k0 := rng.IntN(p.half[c])
					want := -1
					for d := range p.half[c] {
						if k := (k0 + d) % p.half[c]; free[c][k] {
							want = k
							break
						}
					}
					if got := p.next(c, k0); got != want {
						t.Fatalf("size %d, fill %g, class %d, from %d: next %d, a scan finds %d", size, fill, c, k0, got, want)
					}
				}
			}
		}
	}
}
