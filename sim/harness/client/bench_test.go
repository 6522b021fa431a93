package client

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/pki"
	"github.com/connlab/connlab/sim/harness/servers"
	"github.com/connlab/connlab/sim/harness/wire"
)

// BenchmarkReusedCall measures the harness's own cost for one call on a
// reused connection with no injected round trip and no server time: the
// curl-like client, Go's HTTP/1.1, the upstream and the emulated path's
// plumbing. The target is a median of at most 150 µs.
//
// With rtt=1ms the emulated path is in the way too; the overhead reported
// is the median call time minus that millisecond.
func BenchmarkReusedCall(b *testing.B) {
	for _, c := range []struct {
		tls string
		rtt time.Duration
	}{{"none", 0}, {"1.3", 0}, {"1.3", time.Millisecond}} {
		tlsV, rtt := c.tls, c.rtt
		b.Run("tls="+tlsV+"/rtt="+sim.FormatDuration(rtt), func(b *testing.B) {
			certs, err := pki.Shared()
			if err != nil {
				b.Fatal(err)
			}
			s := sim.Default()
			s.RTT, s.DNS, s.ServerTime, s.KeepaliveRequests = rtt, 0, 0, 0
			s.TLS = sim.TLSVersion(tlsV)
			s.Reuse = "process"
			up, err := servers.StartUpstream("", servers.ConfigFor(&s, rtt, servers.OwnClients), certs, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer up.Close()
			w, err := NewWorker(wire.WorkerConfig{Setup: sim.SetupHTTP, Scenario: s, Worker: 1, Upstream: up.Addr(), CAPEM: certs.CAPEM}, func(*sim.Event) {})
			if err != nil {
				b.Fatal(err)
			}
			h := w.NewHTTPClient()
			defer h.CloseIdle("end")
			ctx := context.Background()
			if e := w.HTTPCall(ctx, h, h, h, 1, 1, nil); e.Error != "" {
				b.Fatal(e.Error)
			}
			d := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e := w.HTTPCall(ctx, h, h, h, i+2, 1, nil)
				if e.Error != "" || !e.Reused {
					b.Fatalf("call %d: %+v", i, e)
				}
				d = append(d, e.Total)
			}
			b.StopTimer()
			slices.Sort(d)
			b.ReportMetric(float64((d[len(d)/2] - rtt).Microseconds()), "µs-overhead-median")
			b.ReportMetric(float64((d[len(d)*9/10] - rtt).Microseconds()), "µs-overhead-p90")
		})
	}
}
