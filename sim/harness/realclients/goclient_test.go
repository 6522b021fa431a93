package realclients

import (
	"context"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
)

// checkEvents holds every event to sim.CheckEvent and to what a call
// reports: a connection, and NewConn exactly when not Reused.
func checkEvents(t *testing.T, evs []sim.Event) {
	t.Helper()
	for i := range evs {
		e := &evs[i]
		if err := sim.CheckEvent(e); err != nil {
			t.Errorf("event %d: %v", i, err)
		}
		if e.Error != "" || e.Conn < 1 || e.NewConn == e.Reused || e.Total <= 0 || e.StartTransfer <= 0 {
			t.Errorf("event %d: %s", i, e.AppendJSON(nil))
		}
	}
}

// newPerRound counts the calls of each round (Call) on a new connection.
func newPerRound(evs []sim.Event, rounds int) []int {
	n := make([]int, rounds)
	for _, e := range evs {
		if e.NewConn {
			n[e.Call-1]++
		}
	}
	return n
}

// TestGoDefaultPool: http.DefaultTransport's settings keep 2 idle
// connections per host (DefaultMaxIdleConnsPerHost), so 10 goroutines in
// rounds find 2 idle connections at each round's start and open about 8
// more, closed again when they come back to a full pool: far more than 10
// connections. With MaxIdleConnsPerHost 10 the pool keeps all 10 and the
// run opens exactly 10. The rounds are in lockstep with a pause, so the
// pool's contents at each round's start are the library's doing; how many
// of the other 8 calls a connection freed within the round serves instead
// of their own dial is the scheduler's, so that count has bounds.
func TestGoDefaultPool(t *testing.T) {
	const n, rounds = 10, 5
	const rtt, serverTime = 4 * time.Millisecond, time.Millisecond
	for _, c := range []struct {
		idle     int
		min, max int // connections opened
		wasIdle  int // calls that took an idle connection
	}{
		// 10 in the first round; in each later one at most n-2 dials.
		{idle: 0, min: 3 * n, max: n + (rounds-1)*(n-2), wasIdle: (rounds - 1) * 2},
		{idle: n, min: n, max: n, wasIdle: (rounds - 1) * n},
	} {
		url, ca, up := upstream(t, rtt, serverTime)
		r, err := RunGo(context.Background(), GoConfig{URL: url, CAPEM: ca, Concurrency: n, Calls: rounds,
			MaxIdleConnsPerHost: c.idle, Lockstep: true, Pause: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		checkEvents(t, r.Events)
		accepted, requests := up.Stats()
		t.Logf("%s, MaxIdleConnsPerHost %d (0: default 2), %d goroutines × %d rounds: %d connections opened (server: %d, %d requests), %d used, %d calls took an idle one; new per round %v",
			r.Go, c.idle, n, rounds, r.Dials, accepted, requests, r.Conns, r.Idle, newPerRound(r.Events, rounds))
		if len(r.Events) != n*rounds || requests != n*rounds {
			t.Errorf("%d events, %d requests, not %d", len(r.Events), requests, n*rounds)
		}
		if accepted != r.Dials {
			t.Errorf("the client dialed %d connections, the server accepted %d", r.Dials, accepted)
		}
		if r.Dials < c.min || r.Dials > c.max {
			t.Errorf("MaxIdleConnsPerHost %d: %d connections opened, want %d to %d", c.idle, r.Dials, c.min, c.max)
		}
		if r.Idle != c.wasIdle {
			t.Errorf("MaxIdleConnsPerHost %d: %d calls took an idle connection, want %d", c.idle, r.Idle, c.wasIdle)
		}
	}
}

// TestGoFreeRunning: without rounds, as an application's goroutines run,
// the default pool still opens more connections than goroutines; how many
// is the scheduler's (logged, bounded).
func TestGoFreeRunning(t *testing.T) {
	const n, calls = 10, 5
	for _, idle := range []int{0, n} {
		url, ca, up := upstream(t, 4*time.Millisecond, time.Millisecond)
		r, err := RunGo(context.Background(), GoConfig{URL: url, CAPEM: ca, Concurrency: n, Calls: calls, MaxIdleConnsPerHost: idle})
		if err != nil {
			t.Fatal(err)
		}
		checkEvents(t, r.Events)
		accepted, _ := up.Stats()
		t.Logf("free-running, MaxIdleConnsPerHost %d: %d connections opened (server: %d), %d used", idle, r.Dials, accepted, r.Conns)
		if accepted != r.Dials || r.Dials < n || r.Dials > n*calls {
			t.Errorf("MaxIdleConnsPerHost %d: %d dialed, %d accepted; want the same, %d to %d", idle, r.Dials, accepted, n, n*calls)
		}
	}
}

// TestGoBody: in Go's net/http a connection goes back to the pool when its
// response body has been read to the end (then Close is not needed for
// reuse); closing a body not read to the end closes the connection, and a
// body neither read nor closed holds its connection: each call of those two
// opens a connection of its own.
func TestGoBody(t *testing.T) {
	const calls = 10
	want := map[Body]int{BodyDrainClose: 1, BodyDrain: 1, BodyClose: calls, BodyNone: calls}
	for _, b := range Bodies {
		url, ca, up := upstream(t, time.Millisecond, 0)
		r, err := RunGo(context.Background(), GoConfig{URL: url, CAPEM: ca, Concurrency: 1, Calls: calls, Body: b})
		if err != nil {
			t.Fatal(err)
		}
		checkEvents(t, r.Events)
		accepted, _ := up.Stats()
		t.Logf("%s, body %s: %d calls, %d connections opened (server: %d)", r.Go, b, calls, r.Dials, accepted)
		if r.Dials != want[b] || accepted != want[b] || r.Conns != want[b] {
			t.Errorf("body %s: %d dialed, %d used, %d accepted; want %d", b, r.Dials, r.Conns, accepted, want[b])
		}
	}
}

// TestGoPhases: a new connection's call has connect and TLS times from
// httptrace, in order; a reused one has none, as curl reports them.
func TestGoPhases(t *testing.T) {
	url, ca, _ := upstream(t, 2*time.Millisecond, 0)
	r, err := RunGo(context.Background(), GoConfig{URL: url, CAPEM: ca, Concurrency: 1, Calls: 2})
	if err != nil {
		t.Fatal(err)
	}
	first, second := r.Events[0], r.Events[1]
	if !first.NewConn || first.Connect <= 0 || first.AppConnect < first.Connect || first.StartTransfer < first.AppConnect || first.Total < first.StartTransfer {
		t.Errorf("first call: %s", first.AppendJSON(nil))
	}
	if !second.Reused || second.Connect != 0 || second.AppConnect != 0 || second.Conn != first.Conn || second.LocalPort != first.LocalPort {
		t.Errorf("second call: %s", second.AppendJSON(nil))
	}
}

func TestGoConfigRefused(t *testing.T) {
	for _, c := range []GoConfig{{Concurrency: 0, Calls: 1}, {Concurrency: 1000, Calls: 1000}, {Concurrency: 1, Calls: 1, Body: "peek"}} {
		if _, err := RunGo(context.Background(), c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
