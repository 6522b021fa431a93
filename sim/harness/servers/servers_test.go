package servers

import (
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/harness/pki"
)

// TestLoopbackOnly: the servers listen on loopback only.
func TestLoopbackOnly(t *testing.T) {
	if _, err := StartUpstream("0.0.0.0:0", UpstreamConfig{TLS: "none"}, nil, nil); err == nil {
		t.Error("upstream listened on 0.0.0.0")
	}
	if _, err := StartServers("127.0.0.1:0", "0.0.0.0:0", sim.Default()); err == nil {
		t.Error("DNS server listened on 0.0.0.0")
	}
	if _, err := StartDNS("192.0.2.1:53", 0); err == nil {
		t.Error("DNS server listened on 192.0.2.1")
	}
}

// TestSlowStart: a response larger than the initial window takes one more
// round trip per window, as the model's transferRounds says; after idling
// longer than RTT + 200 ms the window restarts.
func TestSlowStart(t *testing.T) {
	certs, err := pki.Shared()
	if err != nil {
		t.Fatal(err)
	}
	const rtt = 20 * time.Millisecond
	for _, c := range []struct {
		bytes  int
		rounds int
	}{{14000, 1}, {20000, 2}, {60000, 3}} {
		s := sim.Default()
		s.TLS, s.RTT, s.ServerTime, s.ResponseBytes, s.Closer = "none", rtt, 0, c.bytes, "server"
		up, err := StartUpstream("", ConfigFor(&s, rtt, ForeignClients), certs, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The quickest of three: the first connections of a process are slow.
		// The emulated round trips are the least it takes on any machine;
		// more than 3 ms over them fails only when other programs did not
		// keep the machine busy meanwhile (the window then stretched to
		// 250 ms, for /proc/stat's 10 ms ticks).
		want := time.Duration(c.rounds) * rtt
		d, n := time.Hour, int64(0)
		start := time.Now()
		busy := kernel.BusyDuring(func() {
			for range 3 {
				conn, err := net.Dial("tcp", up.Addr())
				if err != nil {
					t.Fatal(err)
				}
				st := time.Now()
				io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
				n, _ = io.Copy(io.Discard, conn)
				d = min(d, time.Since(st))
				conn.Close()
			}
			if d > want+3*time.Millisecond {
				time.Sleep(250*time.Millisecond - time.Since(start))
			}
		})
		up.Close()
		t.Logf("%d B: %d bytes in %v (want %v)", c.bytes, n, d, want)
		switch {
		case d < want-time.Millisecond:
			t.Errorf("%d B took %v, less than %d round trips (%v)", c.bytes, d, c.rounds, want)
		case d > want+3*time.Millisecond && busy == "":
			t.Errorf("%d B took %v, want %d round trips (%v)", c.bytes, d, c.rounds, want)
		case d > want+3*time.Millisecond:
			t.Logf("%d B took %v, want %d round trips (%v); not asserted: %s", c.bytes, d, c.rounds, want, busy)
		}
	}
}

// TestWorkQueueArrivalOrder: requests waiting for the one slot are served
// in the order they arrived, not in the order their goroutines asked (the
// scheduler often wakes the last first).
func TestWorkQueueArrivalOrder(t *testing.T) {
	q := newWorkQueue(1)
	base := time.Now().Add(-10 * time.Millisecond)
	const work = 200 * time.Microsecond
	first := q.start(base, work)
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := 3; i >= 1; i-- { // ask latest first
		wg.Add(1)
		go func() {
			defer wg.Done()
			end := q.start(base.Add(time.Duration(i)*time.Millisecond), work)
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			q.finish(end)
		}()
		for deadline := time.Now().Add(5 * time.Second); ; {
			q.mu.Lock()
			n := len(q.waiting)
			q.mu.Unlock()
			if n == 4-i {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("request %d never waited", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	q.finish(first)
	wg.Wait()
	if !slices.Equal(order, []int{1, 2, 3}) {
		t.Errorf("served in the order %v, want the arrival order [1 2 3]", order)
	}
	if len(q.waiting) != 0 || q.busy != 0 {
		t.Errorf("after all: %d waiting, %d busy", len(q.waiting), q.busy)
	}
}
