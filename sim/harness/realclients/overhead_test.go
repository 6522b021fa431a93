package realclients

import (
	"context"
	"testing"
	"time"

	"github.com/connlab/connlab/internal/testutil"
	"github.com/connlab/connlab/sim"
)

// TestClientOverhead measures what each client costs per reused call
// besides the network and the server: the median reused call's time at
// rtt 0 and server_time 0 (so nothing is subtracted). It holds the
// upstream's own handling of a request too (Go's crypto/tls and the
// HTTP/1.1 parse, the same for every client), so the clients' difference
// is the clients'. Logged; the bound only catches a broken measurement.
func TestClientOverhead(t *testing.T) {
	const calls = 200
	median := func(evs []sim.Event) (time.Duration, int) {
		var ms []float64
		for _, e := range evs {
			if e.Reused {
				ms = append(ms, sim.MS(e.Total))
			}
		}
		return time.Duration(testutil.Median(ms) * float64(time.Millisecond)), len(ms)
	}
	check := func(name string, d time.Duration, n int) {
		t.Logf("%s: median reused call %v over %d reused calls (rtt 0, server_time 0)", name, d.Round(time.Microsecond), n)
		if n < calls/2 || d <= 0 || d > 50*time.Millisecond {
			t.Errorf("%s: median %v over %d reused calls", name, d, n)
		}
	}
	url, ca, _ := upstream(t, 0, 0)
	g, err := RunGo(context.Background(), GoConfig{URL: url, CAPEM: ca, Concurrency: 1, Calls: calls})
	if err != nil {
		t.Fatal(err)
	}
	d, n := median(g.Events)
	check(g.Go+" net/http", d, n)
	if _, err := FindNode(); err != nil {
		t.Skip(err)
	}
	for _, m := range []NodeMode{NodeAgent, NodeFetch} {
		url, caFile, _ := nodeUpstream(t, 0, 0)
		r, err := RunNode(context.Background(), NodeConfig{URL: url, CAFile: caFile, Mode: m, Concurrency: 1, Calls: calls})
		if err != nil {
			t.Fatal(err)
		}
		d, n := median(r.Events)
		check("node "+r.Node+" "+string(m), d, n)
	}
}
