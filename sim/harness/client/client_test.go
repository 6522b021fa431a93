package client

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/pki"
	"github.com/connlab/connlab/sim/harness/servers"
	"github.com/connlab/connlab/sim/harness/wire"
)

// TestLoopbackOnly: a worker calls loopback servers only, and resolves
// names through the harness's DNS server, which answers its own zone only,
// with loopback.
func TestLoopbackOnly(t *testing.T) {
	ctx := context.Background()
	s := sim.Default()
	if _, err := NewWorker(wire.WorkerConfig{Setup: sim.SetupHTTP, Scenario: s, Worker: 1, Upstream: "198.51.100.7:443"}, func(*sim.Event) {}); err == nil {
		t.Error("worker accepted a non-loopback upstream")
	}
	if _, err := NewWorker(wire.WorkerConfig{Setup: sim.SetupRedis, Scenario: s, Worker: 1, Redis: "10.0.0.1:6379"}, func(*sim.Event) {}); err == nil {
		t.Error("worker accepted a non-loopback Redis")
	}
	if _, err := NewWorker(wire.WorkerConfig{Setup: sim.SetupHTTP, Scenario: s, Worker: 1, Upstream: "127.0.0.1:443", DNS: "8.8.8.8:53"}, func(*sim.Event) {}); err == nil {
		t.Error("worker accepted a non-loopback DNS server")
	}
	if _, err := (resolver{server: "8.8.8.8:53"}).lookup(ctx, &dnsCache{}, pki.APIHost); err == nil || !strings.Contains(err.Error(), "only loopback") {
		t.Errorf("resolver asked 8.8.8.8: %v", err)
	}
	d, err := servers.StartDNS("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := resolver{server: d.Addr}
	if a, err := r.lookup(ctx, &dnsCache{}, pki.APIHost); err != nil || a != "127.0.0.1" {
		t.Errorf("%s → %q, %v", pki.APIHost, a, err)
	}
	if _, err := r.lookup(ctx, &dnsCache{}, "example.com"); err == nil || !strings.Contains(err.Error(), "REFUSED") {
		t.Errorf("example.com: %v", err)
	}
}

// Every reuse policy of the model has its real clients: a policy added to
// sim fails here until the harness implements it, and a worker refuses a
// policy it does not know rather than run it as another.
func TestEveryReuseIsReal(t *testing.T) {
	for _, r := range sim.Enums()["Reuse"] {
		if !slices.Contains(Reuses, sim.Reuse(r)) {
			t.Errorf("reuse %q: the model has it, the harness's clients do not", r)
		}
	}
	if _, err := NewWorker(wire.WorkerConfig{Scenario: sim.Scenario{Reuse: "thread"}}, nil); err == nil || !strings.Contains(err.Error(), `reuse "thread"`) {
		t.Errorf("a worker for an unknown reuse policy: %v", err)
	}
}

// Every phase of sim's table is measured by the real HTTP client: a call
// that looks the name up and opens a new TLS connection reports each one,
// later than the one before. A phase added to sim fails here until the
// client measures it. Queue is the wait for a pool's connection, which
// this call does not have (the pool's calls include it in their phases
// and do not report it apart).
func TestEveryPhaseIsMeasured(t *testing.T) {
	certs, err := pki.Shared()
	if err != nil {
		t.Fatal(err)
	}
	d, err := servers.StartDNS("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := sim.Default()
	s.RTT, s.DNS, s.ServerTime, s.TLS = 0, 0, 0, sim.TLS13
	up, err := servers.StartUpstream("", servers.ConfigFor(&s, 0, servers.OwnClients), certs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	w, err := NewWorker(wire.WorkerConfig{Setup: sim.SetupHTTP, Scenario: s, Worker: 1, Upstream: up.Addr(), DNS: d.Addr, CAPEM: certs.CAPEM}, func(*sim.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	h := w.NewHTTPClient()
	defer h.CloseIdle("end")
	e := w.HTTPCall(context.Background(), h, h, h, 1, 1, nil)
	if e.Error != "" || !e.NewConn {
		t.Fatalf("the call: %+v", e)
	}
	var prev time.Duration
	for _, p := range sim.Phases() {
		if p.Key == "queue" {
			continue
		}
		if got := p.Time(e); got <= prev {
			t.Errorf("%s (Event.%s) = %v, want more than the phase before it (%v)", p.Key, p.EventField, got, prev)
		} else {
			prev = got
		}
	}
}
