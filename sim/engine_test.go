package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// base is a quiet scenario: no DNS, no server time, so phase times are
// whole round trips.
func base() Scenario {
	s := Default()
	s.RTT = 10 * ms
	s.DNS = 0
	s.ServerTime = 0
	s.ResponseBytes = 100
	return s
}

func run(t *testing.T, s Scenario) (*Result, []Event) {
	t.Helper()
	var evs []Event
	res, err := Run(context.Background(), s, Options{Seed: 1, Sink: func(e *Event) { evs = append(evs, *e) }})
	if err != nil {
		t.Fatal(err)
	}
	return res, evs
}

func calls(evs []Event) []Event {
	var out []Event
	for _, e := range evs {
		if e.Kind == KindCall {
			out = append(out, e)
		}
	}
	return out
}

func count(evs []Event, k Kind, by, reason string) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k && (by == "" || string(e.By) == by) && (reason == "" || string(e.Reason) == reason) {
			n++
		}
	}
	return n
}

// TestRoundTrips checks the round trips to the first response byte against
// the handshakes' (RFC 5246, RFC 8446): reused 1, plain TCP 2, TLS 1.2 full
// 4, TLS 1.3 full or resumed 3, TLS 1.3 0-RTT 2.
func TestRoundTrips(t *testing.T) {
	cases := []struct {
		name      string
		tls       string
		resume    bool
		early     bool
		wantFirst int // RTTs of the first call (new connection)
		wantNew2  int // RTTs of the second call on a new connection (session cached)
	}{
		{"plain", "none", true, false, 2, 2},
		{"tls1.2", "1.2", false, false, 4, 4},
		{"tls1.2-resumed", "1.2", true, false, 4, 3},
		{"tls1.3", "1.3", false, false, 3, 3},
		{"tls1.3-resumed", "1.3", true, false, 3, 3},
		{"tls1.3-0rtt", "1.3", true, true, 3, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := base()
			s.TLS, s.TLSResume, s.EarlyData = TLSVersion(c.tls), c.resume, c.early
			s.Cert = "ecdsa-p256"
			// The session is kept across requests, connections are not.
			s.Reuse = "process"
			s.ShareSets = [][]string{{"dns", "ssl_session"}}
			s.Requests = 2
			_, evs := run(t, s)
			cs := calls(evs)
			if len(cs) != 2 {
				t.Fatalf("%d calls", len(cs))
			}
			for i, want := range []int{c.wantFirst, c.wantNew2} {
				got := cs[i].StartTransfer
				rtts := int((got + ms) / s.RTT) // handshake CPU is under 1 ms
				if rtts != want {
					t.Errorf("call %d: starttransfer %v = %d RTT, want %d", i+1, got, rtts, want)
				}
			}
		})
	}
	t.Run("reused", func(t *testing.T) {
		s := base()
		s.Reuse = "process"
		s.Requests = 2
		_, evs := run(t, s)
		c := calls(evs)[1]
		if !c.Reused || c.StartTransfer != s.RTT || c.NameLookup != 0 || c.Connect != 0 || c.AppConnect != 0 {
			t.Errorf("reused call: %+v", c)
		}
	})
}

func TestTransferRounds(t *testing.T) {
	// Slow start from an initial window of 10 × 1460 B (RFC 6928): ≤ 14.6 KB 1, ≤ 43.8 KB 2, ≤ 102 KB 3, ≤ 219 KB 4 round trips.
	for _, c := range []struct{ bytes, rounds int }{
		{1, 1}, {14600, 1}, {14601, 2}, {43800, 2}, {43801, 3}, {102200, 3}, {102201, 4}, {219000, 4}, {219001, 5},
	} {
		if got, _ := transferRounds(c.bytes, 1460, 10); got != c.rounds {
			t.Errorf("%d bytes: %d rounds, want %d", c.bytes, got, c.rounds)
		}
	}
}

func TestSlowStartAfterIdle(t *testing.T) {
	s := base()
	s.Reuse = "process"
	s.Requests = 3
	s.ResponseBytes = 40000 // two windows from the initial one, one from a grown one
	s.PauseEvery = 2
	s.Pause = time.Second // longer than RTT + 200 ms
	for _, after := range []bool{true, false} {
		s.SlowStartAfterIdle = after
		_, evs := run(t, s)
		cs := calls(evs)
		warm := cs[1].Total
		idle := cs[2].Total
		if warm != s.RTT {
			t.Errorf("warm call took %v, want one RTT", warm)
		}
		want := s.RTT
		if after {
			want = 2 * s.RTT
		}
		if idle != want {
			t.Errorf("slow_start_after_idle=%v: call after 1 s idle took %v, want %v", after, idle, want)
		}
	}
}

func TestDNSCache(t *testing.T) {
	s := base()
	s.DNS = 5 * ms
	s.Reuse = "process"
	s.ShareSets = [][]string{{"dns"}} // names are kept, connections are not
	s.Requests = 3
	s.ThinkTime = 40 * time.Second // the third call comes 80 s after the first lookup
	_, evs := run(t, s)
	var got []time.Duration
	for _, c := range calls(evs) {
		got = append(got, c.NameLookup)
	}
	want := []time.Duration{5 * ms, 0, 5 * ms}
	if !slices.Equal(got, want) {
		t.Errorf("namelookup %v, want %v (curl keeps answers 60 s)", got, want)
	}
}

func TestKeepaliveTimeoutAndRace(t *testing.T) {
	s := base()
	s.Reuse = "process"
	s.Requests = 2
	s.KeepaliveTimeout = time.Second
	// The server starts its timer when it sends the response (RTT/2 before
	// the client has it), so a think time of 1 s - RTT/2 sends the second
	// request exactly as the server closes: it reaches a closed socket.
	s.ThinkTime = time.Second - s.RTT/2
	res, evs := run(t, s)
	if res.Summary.Races != 1 || res.Summary.Errors != 0 || res.Summary.Connects != 2 {
		t.Fatalf("race: %+v", res.Summary)
	}
	c := calls(evs)[1]
	if !c.Retried || !c.NewConn {
		t.Errorf("second call: %+v", c)
	}
	// The request left as the server closed; the client learns it when
	// the server's FIN arrives, half a round trip later, then connects.
	if c.Connect != s.RTT/2+s.RTT {
		t.Errorf("connect %v, want 1.5 RTT (half lost waiting for the FIN)", c.Connect)
	}
	if count(evs, KindClose, "server", "idle-timeout") != 1 {
		t.Error("no server close event")
	}

	s.RetryOnRace = false
	res, _ = run(t, s)
	if res.Summary.Errors != 1 || res.Summary.FailedRequests != 1 {
		t.Errorf("without retry: %+v", res.Summary)
	}

	// Well after the timeout the client sees the FIN and reconnects quietly.
	s.RetryOnRace = true
	s.ThinkTime = 2 * time.Second
	res, evs = run(t, s)
	if res.Summary.Races != 0 || res.Summary.Connects != 2 || res.Summary.TimeWaitPeak != 0 || res.Summary.ServerTimeWaitPeak != 1 {
		t.Errorf("after timeout: %+v", res.Summary)
	}
	if count(evs, KindClose, "server", "dead") != 0 || count(evs, KindTimeWait, "server", "") != 1 {
		t.Errorf("server should hold the only TIME_WAIT")
	}

	// Just before the timeout the connection is reused.
	s.ThinkTime = time.Second - 2*s.RTT
	res, _ = run(t, s)
	if res.Summary.Races != 0 || res.Summary.Connects != 1 {
		t.Errorf("before timeout: %+v", res.Summary)
	}
}

func TestClientIdleAgeAndLifetime(t *testing.T) {
	s := base()
	s.Reuse = "process"
	s.Requests = 2
	s.KeepaliveTimeout = 0
	s.ThinkTime = 120 * time.Second // beyond curl's 118 s
	res, evs := run(t, s)
	if res.Summary.Connects != 2 || res.Summary.TimeWaitPeak != 1 || count(evs, KindClose, "client", "max-idle-age") != 1 {
		t.Errorf("max idle age: %+v", res.Summary)
	}
	s.ThinkTime = 100 * time.Second
	res, _ = run(t, s)
	if res.Summary.Connects != 1 {
		t.Errorf("within max idle age: %+v", res.Summary)
	}
	s.MaxLifetime = 50 * time.Second
	res, evs = run(t, s)
	if res.Summary.Connects != 2 || count(evs, KindClose, "client", "max-lifetime") != 1 {
		t.Errorf("max lifetime: %+v", res.Summary)
	}
}

func TestKeepaliveRequests(t *testing.T) {
	s := base()
	s.Reuse = "process"
	s.Requests = 7
	s.KeepaliveRequests = 3
	res, evs := run(t, s)
	if got := res.Summary.NumConnects; !slices.Equal(got, []int{1, 0, 0, 1, 0, 0, 1}) {
		t.Errorf("num_connects %v", got)
	}
	if count(evs, KindClose, "server", "keepalive-requests") != 2 || res.Summary.ServerTimeWaitPeak != 2 {
		t.Errorf("server should close twice: %+v", res.Summary)
	}
}

func TestTimeWaitSide(t *testing.T) {
	s := base()
	s.Reuse = "none"
	s.Requests = 5
	for _, closer := range []Side{"client", "server"} {
		s.Closer = closer
		res, _ := run(t, s)
		client, server := res.Summary.TimeWaitPeak, res.Summary.ServerTimeWaitPeak
		if (closer == "client") != (client == 5 && server == 0) || (closer == "server") != (server == 5 && client == 0) {
			t.Errorf("closer %s: client TIME_WAIT %d, server %d", closer, client, server)
		}
	}
}

func TestPortExhaustion(t *testing.T) {
	s := base()
	s.Reuse = "none"
	s.Load = "open"
	s.Rate = 10
	s.Requests = 0
	s.Duration = 90 * time.Second
	s.PortRange = PortRange{40000, 40099} // 100 ports
	s.TWReuse = 0
	res, evs := run(t, s)
	sum := res.Summary
	// 100 ports at 10 new connections/s last 10 s; TIME_WAIT frees the
	// first one 60 s after it was taken.
	if sum.FirstPortErrorS == nil || *sum.FirstPortErrorS < 9.9 || *sum.FirstPortErrorS > 10.1 {
		t.Fatalf("first EADDRNOTAVAIL at %v, want 10 s", sum.FirstPortErrorS)
	}
	if sum.RecoveredS == nil || *sum.RecoveredS < 60 || *sum.RecoveredS > 60.2 {
		t.Errorf("connects again at %v, want 60 s", sum.RecoveredS)
	}
	if sum.TimeWaitPeak != 100 || sum.PortErrors != sum.Errors || sum.PortErrors < 490 {
		t.Errorf("summary %+v", sum)
	}
	if count(evs, KindPortError, "", "") != sum.PortErrors {
		t.Error("port_error events do not match the count")
	}
	for _, c := range calls(evs) {
		if c.Error != "" && !strings.Contains(c.Error, "EADDRNOTAVAIL") {
			t.Errorf("error %q", c.Error)
		}
	}
	// tcp_tw_reuse = 1 takes TIME_WAIT ports older than 1 s: no errors.
	s.TWReuse = 1
	res, evs = run(t, s)
	if res.Summary.PortErrors != 0 || count(evs, KindTimeWaitEnd, "client", "reused") == 0 {
		t.Errorf("tw_reuse=1: %+v", res.Summary)
	}
	// tw_reuse = 2 applies to loopback destinations only.
	s.TWReuse = 2
	if res, _ = run(t, s); res.Summary.PortErrors == 0 {
		t.Error("tw_reuse=2 should not help a remote destination")
	}
	s.Loopback = true
	if res, _ = run(t, s); res.Summary.PortErrors != 0 {
		t.Error("tw_reuse=2 should help a loopback destination")
	}
	// More than 100 new connections in one second: even tw_reuse cannot
	// help, because of its 1 s rule.
	s.Rate = 200
	s.Threads = 0
	s.Duration = 3 * time.Second
	if res, _ = run(t, s); res.Summary.PortErrors == 0 {
		t.Error("200 connections/s over 100 ports must fail within the 1 s rule")
	}
}

func TestWorkersAndDispatch(t *testing.T) {
	s := base()
	s.Reuse = "process"
	s.Workers = 4
	s.Requests = 12
	for _, d := range []Dispatch{"queue", "round-robin"} {
		s.Dispatch = d
		res, _ := run(t, s)
		if !slices.Equal(res.Summary.ConnectsPerWorker, []int{1, 1, 1, 1}) {
			t.Errorf("%s: connects per worker %v", d, res.Summary.ConnectsPerWorker)
		}
	}
	s.Dispatch = "random"
	res, _ := run(t, s)
	total := 0
	for _, n := range res.Summary.ConnectsPerWorker {
		total += n
		if n > 1 {
			t.Errorf("random: a worker connected %d times", n)
		}
	}
	if total != res.Summary.Connects || total < 1 {
		t.Errorf("random: %+v", res.Summary)
	}
	// pm.max_requests drops the worker's pool.
	s.Dispatch = "queue"
	s.MaxRequests = 3
	res, evs := run(t, s)
	if res.Summary.Connects != 4 || count(evs, KindClose, "client", "worker-exit") != 4 {
		t.Errorf("max_requests=3 over 3 requests per worker: %+v", res.Summary)
	}
	s.MaxRequests = 1
	if res, _ = run(t, s); res.Summary.Connects != 12 {
		t.Errorf("max_requests=1: %d connects", res.Summary.Connects)
	}
}

func TestQueueingAtWorkers(t *testing.T) {
	s := base()
	s.Reuse = "process"
	s.Workers = 1
	s.Concurrency = 4
	s.Requests = 4
	s.AppTime = 100 * ms
	s.CallsPerRequest = 0
	res, _ := run(t, s)
	// One worker, four requests at once, 100 ms each: answered at 100, 200,
	// 300 and 400 ms.
	if got := res.Summary.Response; got.Mean != 250 || got.P99 < 395 {
		t.Errorf("response %+v, want mean 250 ms", got)
	}
	s.Threads = 0 // event-driven: no queueing
	if res, _ = run(t, s); res.Summary.Response.Mean != 100 {
		t.Errorf("unlimited threads: %+v", res.Summary.Response)
	}
}

func TestServerConcurrencyAndConnCost(t *testing.T) {
	s := base()
	s.RTT = 0
	s.TLS = "none"
	s.Workers = 1
	s.Threads = 0
	s.Concurrency = 10
	s.Requests = 1000
	s.ServerTime = ms
	s.ServerConcurrency = 1
	s.ServerConnTime = ms
	s.Reuse = "none"
	without, _ := run(t, s)
	s.Reuse = "upstream-keepalive"
	with, _ := run(t, s)
	// One server thread: 1 ms per request, plus 1 ms per new connection.
	if r := without.Summary.ThroughputRPS; r < 490 || r > 510 {
		t.Errorf("without keep-alive: %v rps, want 500", r)
	}
	if r := with.Summary.ThroughputRPS; r < 980 || r > 1010 {
		t.Errorf("with keep-alive: %v rps, want 1000", r)
	}
}

func TestPool(t *testing.T) {
	s := base()
	s.Reuse = "pool"
	s.Workers = 1
	s.Threads = 0
	s.Concurrency = 5
	s.Requests = 50
	s.PoolMax = 2
	res, evs := run(t, s)
	if res.Summary.OpenPeak != 2 || res.Summary.Connects != 2 || res.Summary.Errors != 0 {
		t.Errorf("pool_max 2: %+v", res.Summary)
	}
	waited := 0
	for _, c := range calls(evs) {
		if c.Queue > 0 {
			waited++
		}
	}
	if waited == 0 {
		t.Error("no call waited for the pool")
	}
	s.PoolFull = "error"
	if res, _ = run(t, s); res.Summary.Errors == 0 {
		t.Error("pool_full=error should fail calls")
	}
	// Go's MaxIdleConnsPerHost: connections beyond the idle cap close.
	s.PoolFull, s.PoolMax, s.PoolMaxIdle = "wait", 0, 2
	res, evs = run(t, s)
	if res.Summary.Connects <= 5 || count(evs, KindClose, "client", "idle-full") == 0 {
		t.Errorf("pool_max_idle 2 with 5 users: %+v", res.Summary)
	}
}

func TestUpstreamKeepaliveLRU(t *testing.T) {
	s := base()
	s.Reuse = "upstream-keepalive"
	s.UpstreamKeepalive = 2
	s.Workers = 1
	s.Threads = 0
	s.Concurrency = 4
	s.Requests = 40
	res, evs := run(t, s)
	if count(evs, KindClose, "client", "evict") == 0 || res.Summary.TimeWaitPeak == 0 {
		t.Errorf("keepalive 2 with 4 concurrent: %+v", res.Summary)
	}
	s.UpstreamKeepalive = 4
	if res, _ = run(t, s); res.Summary.Connects != 4 || res.Summary.TimeWaitPeak != 0 {
		t.Errorf("keepalive 4: %+v", res.Summary)
	}
}

func TestCLIMode(t *testing.T) {
	s := base()
	s.Mode = "cli"
	s.Reuse = "process"
	s.Requests = 3
	s.CallsPerRequest = 2
	res, _ := run(t, s)
	if !slices.Equal(res.Summary.NumConnects, []int{1, 0, 1, 0, 1, 0}) {
		t.Errorf("CLI: num_connects %v: nothing outlives a script", res.Summary.NumConnects)
	}
}

func TestDeterministic(t *testing.T) {
	s := base()
	s.Load, s.Rate, s.Arrival = "open", 50, "poisson"
	s.Requests = 2000
	s.Reuse = "pool"
	s.Workers, s.Dispatch = 3, "random"
	s.ServerJitter = 0.5
	s.ServerTime = 20 * ms
	stream := func(seed uint64) []byte {
		var buf bytes.Buffer
		if _, err := Run(context.Background(), s, Options{Seed: seed, Sink: func(e *Event) {
			buf.Write(e.AppendJSON(nil))
			buf.WriteByte('\n')
		}}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a, b, c := stream(7), stream(7), stream(8)
	if !bytes.Equal(a, b) {
		t.Error("same seed, different output")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds, same output")
	}
	for _, line := range bytes.Split(bytes.TrimSpace(a), []byte("\n")) {
		if !json.Valid(line) {
			t.Fatalf("invalid JSON: %s", line)
		}
	}
}

func TestLinger(t *testing.T) {
	s := base()
	s.Reuse = "process"
	s.Requests = 1
	s.Linger = 80 * time.Second
	res, evs := run(t, s)
	// curl does not watch idle connections: its socket waits in CLOSE_WAIT
	// until its next use, so the server's stays in FIN_WAIT_2, not TIME_WAIT.
	if count(evs, KindClose, "server", "idle-timeout") != 1 || res.Summary.ServerTimeWaitPeak != 0 {
		t.Error("linger should show the server's idle close, and no TIME_WAIT before curl closes its side")
	}
	// A pool (Go's Transport) closes its side when the FIN arrives.
	p := s
	p.Reuse = "pool"
	if pres, _ := run(t, p); pres.Summary.ServerTimeWaitPeak != 1 {
		t.Errorf("pool: server_time_wait_peak %d, want 1", pres.Summary.ServerTimeWaitPeak)
	}
	if res.Summary.DurationS > 1 {
		t.Errorf("duration %v s counts the linger", res.Summary.DurationS)
	}
	if last := res.Series.Samples[len(res.Series.Samples)-1]; last.T != 80.02 && last.T < 80 {
		t.Errorf("series ends at %v s", last.T)
	}
}

func TestEventsInTimeOrderPerConnection(t *testing.T) {
	s := base()
	s.Reuse = "upstream-keepalive"
	s.UpstreamKeepalive = 1
	s.Threads = 0
	s.Concurrency = 3
	s.Requests = 30
	s.KeepaliveTimeout = 50 * ms
	s.ThinkTime = 30 * ms
	_, evs := run(t, s)
	last := map[int]time.Duration{}
	for _, e := range evs {
		if e.Conn == 0 || e.Kind == KindCall {
			continue
		}
		if e.At < last[e.Conn] {
			t.Fatalf("connection %d: %s at %v before an earlier event at %v", e.Conn, e.Kind, e.At, last[e.Conn])
		}
		last[e.Conn] = e.At
	}
}

// TestMemoryDoesNotGrowWithRequests runs 50k and 400k requests without a
// sink: the bigger run must not allocate in proportion (events are
// aggregated, connection and request slots recycled).
func TestMemoryDoesNotGrowWithRequests(t *testing.T) {
	alloc := func(n int) uint64 {
		s := base()
		s.Reuse = "none"
		s.Workers, s.Concurrency = 20, 20
		s.ThinkTime = 200 * ms
		s.Requests = n
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := Run(context.Background(), s, Options{}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, big := alloc(50_000), alloc(400_000)
	if ratio := float64(big) / float64(small); ratio > 2 {
		t.Errorf("8× the requests allocated %.1f× the memory (%d vs %d bytes)", ratio, big, small)
	}
}

// TestMemoryDoesNotGrowWithThreads: workers × threads is up to 10^9 thread
// slots; a run allocates for the requests it has, not for every slot (a
// page's link once made sim serve allocate gigabytes and run for seconds
// after its client left).
func TestMemoryDoesNotGrowWithThreads(t *testing.T) {
	s := base()
	s.Requests, s.Concurrency = 3, 3
	s.Workers, s.Threads = 10_000, 100_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Errorf("%d workers × %d threads allocated %d MB for %d requests", s.Workers, s.Threads, got>>20, s.Requests)
	}
	// The three requests went to three workers, each idle: the slots never
	// used are handed out in turn over the workers.
	if w := res.Summary.ConnectsPerWorker; len(w) < 3 || w[0] != 1 || w[1] != 1 || w[2] != 1 {
		t.Errorf("connects per worker %v, want one on each of the first three", w[:min(len(w), 4)])
	}
}

func TestSeriesBounded(t *testing.T) {
	s := base()
	s.Reuse = "none"
	s.Requests = 0
	s.Load, s.Rate = "open", 1
	s.Duration = 5 * time.Hour
	s.SeriesInterval = time.Second
	res, _ := run(t, s)
	n := len(res.Series.Samples)
	if n == 0 || n > MaxSamples {
		t.Fatalf("%d samples", n)
	}
	total := 0
	for _, x := range res.Series.Samples {
		total += x.Connects
	}
	if total != res.Summary.Connects {
		t.Errorf("series counts %d connects, summary %d", total, res.Summary.Connects)
	}
	// TIME_WAIT at 1 new connection/s settles at 60.
	if mid := res.Series.Samples[n/2]; mid.TimeWait < 59 || mid.TimeWait > 61 {
		t.Errorf("TIME_WAIT mid-run %d, want 60", mid.TimeWait)
	}
}

func ExampleRun() {
	s := Default()
	s.RTT = 12 * time.Millisecond
	s.DNS = 30 * time.Millisecond
	s.TLS = "1.2"
	s.ResponseBytes = 20000
	s.Reuse = "process" // curl_share_init_persistent()
	res, err := Run(context.Background(), s, Options{Seed: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println("num_connects:", res.Summary.NumConnects)
	fmt.Println("median ms:", res.Summary.Total.P50)
	// Output:
	// num_connects: [1 0 0 0 0 0 0 0 0 0]
	// median ms: 14
}
