package sim

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// stackScenario is the source article's stack as a chain: a closed loop of
// users → nginx (two event-driven workers) → a Python app (one process of
// eight threads) → Redis, every hop without reuse: nginx speaks HTTP/1.0
// with Connection: close, the view makes its own Redis client.
func stackScenario(t testing.TB) Scenario {
	t.Helper()
	s := Default()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string]any{
		"load": "closed", "concurrency": 25, "duration": "10s", "requests": 0,
		"tls": "none", "dns": "0s", "rtt": "0.05ms", "loopback": true, "tw_reuse": 0, "port_range": "1024-65535",
	} {
		must(s.Set(k, v))
	}
	for _, n := range []string{"nginx", "app", "redis"} {
		must(s.AddTier(n))
	}
	for k, v := range map[string]any{
		"nginx.workers": 2, "nginx.threads": 0, "nginx.server_time": "0.06ms", "nginx.server_conn_time": "0.02ms",
		"nginx.reuse": "none", "nginx.calls_per_request": 1,
		"app.workers": 1, "app.threads": 8, "app.server_time": "0.55ms", "app.server_conn_time": "0.1ms",
		"app.keepalive_timeout": "2s", "app.keepalive_requests": 0, "app.server_closes_first": 0.8, "app.simultaneous_close": 0.02,
		"app.reuse": "request", "app.calls_per_request": 2, "app.client_conn_time": "0.1ms",
		"redis.workers": 1, "redis.threads": 0, "redis.server_time": "0.015ms", "redis.server_conn_time": "0.02ms",
		"redis.keepalive_timeout": "0s", "redis.keepalive_requests": 0,
	} {
		must(s.Set("tier."+k, v))
	}
	return s
}

func runChainT(t testing.TB, s Scenario, sink func(*Event)) *Summary {
	t.Helper()
	r, err := Run(context.Background(), s, Options{Seed: 1, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	return &r.Summary
}

func set(t testing.TB, s *Scenario, kv ...any) {
	t.Helper()
	for i := 0; i < len(kv); i += 2 {
		if err := s.Set(kv[i].(string), kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestChainNoReuse: without reuse every request opens a connection on the
// two inner hops; the app's hop puts TIME_WAIT where its measured shares
// say, Redis's on the app (redis-py closes, redis-server waits), and the
// app, whose one process does one piece of work at a time, sets the pace.
func TestChainNoReuse(t *testing.T) {
	s := stackScenario(t)
	sum := runChainT(t, s, nil)
	n := sum.Requests
	if n < 10000 || sum.FailedRequests != 0 {
		t.Fatalf("%d requests, %d failed", n, sum.FailedRequests)
	}
	if !reflect.DeepEqual(sum.Chain, []string{"nginx", "app", "redis"}) {
		t.Errorf("chain %v", sum.Chain)
	}
	ng, app, rd := sum.Hop["nginx"], sum.Hop["app"], sum.Hop["redis"]
	if ng.Connects != 25 || ng.Reused != n-25 || ng.TimeWaitClient+ng.TimeWaitServer != 0 {
		t.Errorf("hop into nginx (users keep their connections): %+v", ng)
	}
	if app.Connects != n || app.Reused != 0 {
		t.Errorf("hop into the app: %d connects, %d reused for %d requests", app.Connects, app.Reused, n)
	}
	// Shares of the close race, counted exactly (error diffusion).
	if want := int(math.Round(0.02 * float64(n))); app.Simultaneous != want {
		t.Errorf("simultaneous closes %d, want %d", app.Simultaneous, want)
	}
	if want := int(math.Round(0.8 * float64(n))); app.ClosedByServer != want {
		t.Errorf("closed by the app first %d, want %d", app.ClosedByServer, want)
	}
	if app.ClosedByClient+app.ClosedByServer+app.Simultaneous != n {
		t.Errorf("closes %d + %d + %d != %d", app.ClosedByClient, app.ClosedByServer, app.Simultaneous, n)
	}
	if app.TimeWaitServer != app.ClosedByServer+app.Simultaneous || app.TimeWaitClient != app.ClosedByClient+app.Simultaneous {
		t.Errorf("TIME_WAIT %d/%d for closes %+v", app.TimeWaitClient, app.TimeWaitServer, app)
	}
	// One Redis connection per request carries both commands, and the app
	// closes it: every TIME_WAIT is the app's.
	if rd.Connects != n || rd.Calls != 2*n || rd.Reused != n || rd.TimeWaitClient != n || rd.TimeWaitServer != 0 {
		t.Errorf("hop into redis: %+v", rd)
	}
	// Under 60 s nothing expires: the client's peak is the count
	// (tcp_tw_reuse = 0 takes nothing over); the app's, the count less the
	// sockets a new SYN took over where connect()'s search came back to a
	// port whose connection the app had closed first.
	if rd.TimeWaitClientPeak != n || app.TimeWaitServerEnd != app.TimeWaitServer-app.TimeWaitTakenOver ||
		app.TimeWaitServerPeak < app.TimeWaitServerEnd || app.TimeWaitServerPeak > app.TimeWaitServer {
		t.Errorf("peaks %d, %d; app: %d entered, %d taken over, %d at the end", app.TimeWaitServerPeak, rd.TimeWaitClientPeak,
			app.TimeWaitServer, app.TimeWaitTakenOver, app.TimeWaitServerEnd)
	}
	// The app's process is busy all the time with 0.55 + 0.1 (accept) +
	// 0.1 (Redis connection) ms per request.
	perReq := 0.55 + 0.1 + 0.1
	if got, want := sum.ThroughputRPS, 1000/perReq; math.Abs(got-want)/want > 0.01 {
		t.Errorf("throughput %.1f, want %.1f", got, want)
	}
	if u := sum.Tier["app"].Utilisation; u < 0.99 {
		t.Errorf("app utilisation %.3f", u)
	}
	if w := sum.Tier["app"].WorkMS; math.Abs(w-perReq) > 0.001 {
		t.Errorf("app work %.3f ms per request, want %.3f", w, perReq)
	}
	if u := sum.Tier["nginx"].Utilisation; u > 0.1 {
		t.Errorf("nginx utilisation %.3f", u)
	}
	// Little's law: 25 users over the throughput is the response time.
	if got, want := sum.Response.Mean, 25/sum.ThroughputRPS*1000; math.Abs(got-want)/want > 0.02 {
		t.Errorf("mean response %.3f ms, want %.3f", got, want)
	}
	if q := sum.Tier["app"].Queue.Mean; q < 10 {
		t.Errorf("the app's queue %.3f ms: its process should be the bottleneck", q)
	}
	if sum.Connects != ng.Connects+app.Connects+rd.Connects {
		t.Errorf("total connects %d", sum.Connects)
	}
}

// TestChainReuse: nginx keepalive 32 and a pool in the app: after the
// first requests no hop opens a connection, and nothing is in TIME_WAIT.
func TestChainReuse(t *testing.T) {
	s := stackScenario(t)
	set(t, &s, "tier.nginx.reuse", "upstream-keepalive", "tier.nginx.upstream_keepalive", 32, "tier.app.reuse", "pool")
	sum := runChainT(t, s, nil)
	app, rd := sum.Hop["app"], sum.Hop["redis"]
	if app.Connects > 25 || app.Connects == 0 || rd.Connects > 8 || rd.Connects == 0 {
		t.Errorf("connects: app %d (at most the users), redis %d (at most the threads)", app.Connects, rd.Connects)
	}
	if sum.TimeWaitPeak != 0 || sum.ServerTimeWaitPeak != 0 {
		t.Errorf("TIME_WAIT %d/%d", sum.TimeWaitPeak, sum.ServerTimeWaitPeak)
	}
	if got, want := sum.ThroughputRPS, 1000/0.55; math.Abs(got-want)/want > 0.01 {
		t.Errorf("throughput %.1f, want %.1f", got, want)
	}
}

// TestChainServerWithoutKeepalive: a server that closes every connection
// after its first response (Flask's development server) makes nginx's
// keepalive useless: every request still opens a connection.
func TestChainServerWithoutKeepalive(t *testing.T) {
	s := stackScenario(t)
	set(t, &s, "tier.nginx.reuse", "upstream-keepalive", "tier.app.keepalive_requests", 1)
	sum := runChainT(t, s, nil)
	app := sum.Hop["app"]
	if app.Connects != sum.Requests || app.Reused != 0 || app.IdlePeak != 0 {
		t.Errorf("keepalive against a server that closes: %+v for %d requests", app, sum.Requests)
	}
	off := runChainT(t, stackScenario(t), nil)
	if app.TimeWaitServer != off.Hop["app"].TimeWaitServer*sum.Requests/off.Requests {
		t.Errorf("TIME_WAIT on the app %d with keepalive, %d without (%d/%d requests)", app.TimeWaitServer, off.Hop["app"].TimeWaitServer, sum.Requests, off.Requests)
	}
}

// TestChainKeepaliveLRU: nginx takes the most recently used idle
// connection and closes the least recently used beyond keepalive N, as it
// returns one (nginx closes first: TIME_WAIT on nginx's side). Users who
// pause 50 ms leave most connections idle at once, so the fewer nginx
// keeps, the more it opens. Those it keeps but does not need sit at the
// bottom of its cache until the app's 2 s keep-alive timer closes them.
func TestChainKeepaliveLRU(t *testing.T) {
	prev, first := -1, 0
	for _, n := range []int{32, 8, 2, 1} {
		s := stackScenario(t)
		set(t, &s, "tier.nginx.reuse", "upstream-keepalive", "tier.nginx.upstream_keepalive", n, "tier.app.reuse", "pool",
			"think_time", "50ms")
		sum := runChainT(t, s, nil)
		app := sum.Hop["app"]
		if app.IdlePeak > 2*n {
			t.Errorf("keepalive %d: %d idle at once over two workers", n, app.IdlePeak)
		}
		if app.ClosedByClient != app.TimeWaitClient || app.TimeWaitServer != app.ClosedByServer || app.Simultaneous != 0 {
			t.Errorf("keepalive %d: closes %+v", n, app)
		}
		if n < 32 && app.ClosedByClient == 0 {
			t.Errorf("keepalive %d: no eviction", n)
		}
		if n == 32 && (app.ClosedByClient != 0 || app.ClosedByServer == 0) {
			t.Errorf("keepalive 32: %d evictions, %d idle closes by the app", app.ClosedByClient, app.ClosedByServer)
		}
		if prev >= 0 && app.Connects < prev {
			t.Errorf("keepalive %d opened %d connections, fewer than with more kept (%d)", n, app.Connects, prev)
		}
		if prev < 0 {
			first = app.Connects
		}
		prev = app.Connects
	}
	if prev < 2*first {
		t.Errorf("keepalive 1 opened %d connections, keepalive 32 %d", prev, first)
	}
}

// TestChainIdleTimeout: gunicorn closes a kept connection idle for 2 s:
// after each pause of the users, nginx's idle connections are gone and the
// TIME_WAIT sockets are the app's.
func TestChainIdleTimeout(t *testing.T) {
	s := stackScenario(t)
	set(t, &s, "tier.nginx.reuse", "upstream-keepalive", "tier.app.reuse", "pool",
		"pause_every", 100, "pause", "3s", "concurrency", 4)
	sum := runChainT(t, s, nil)
	app := sum.Hop["app"]
	if app.ClosedByServer == 0 || app.TimeWaitServer != app.ClosedByServer || app.TimeWaitClient != 0 {
		t.Errorf("idle closes by the app: %+v", app)
	}
	if app.Connects < 2*app.ClosedByServer/2 || app.Connects <= 4 {
		t.Errorf("%d connects after %d idle closes", app.Connects, app.ClosedByServer)
	}
}

// TestChainPortExhaustion: the hop into Redis runs out of ports first (a
// connection per request, every TIME_WAIT on the app's side); its
// EADDRNOTAVAIL fails the requests, which the load sees.
func TestChainPortExhaustion(t *testing.T) {
	s := stackScenario(t)
	set(t, &s, "port_range", "40000-41999", "duration", "5s", "tier.nginx.reuse", "upstream-keepalive", "tier.app.keepalive_requests", 0)
	sum := runChainT(t, s, nil)
	rd := sum.Hop["redis"]
	if rd.PortErrors == 0 || rd.PortsInUsePeak != 2000 || sum.FailedRequests == 0 || sum.FirstPortErrorS == nil {
		t.Errorf("redis hop %+v, %d failed requests", rd, sum.FailedRequests)
	}
	if sum.Hop["app"].PortErrors != 0 {
		t.Errorf("the app's hop, with keep-alive, ran out of ports")
	}
	// With tcp_tw_reuse (loopback) connect() takes TIME_WAIT ports older
	// than a second: no errors.
	set(t, &s, "tw_reuse", 2)
	if got := runChainT(t, s, nil); got.PortErrors != 0 || got.Hop["redis"].TimeWaitClientPeak > 2000 {
		t.Errorf("tw_reuse = 2: %d port errors, peak %d", got.PortErrors, got.Hop["redis"].TimeWaitClientPeak)
	}
}

// TestChainEvents: the events name their hop, and the same seed gives the
// same events.
func TestChainEvents(t *testing.T) {
	s := stackScenario(t)
	set(t, &s, "requests", 200, "duration", "0s")
	run := func() (string, map[int]int) {
		var b []byte
		hops := map[int]int{}
		runChainT(t, s, func(e *Event) {
			b = e.AppendJSON(b)
			b = append(b, '\n')
			if e.Kind == KindCall {
				hops[int(e.Hop)]++
			}
		})
		return string(b), hops
	}
	a, hops := run()
	if hops[1] != 200 || hops[2] != 200 || hops[3] != 400 || len(hops) != 3 {
		t.Errorf("calls by hop %v", hops)
	}
	if !strings.Contains(a, `"kind":"time_wait","at_ms":`) || !strings.Contains(a, `"hop":3`) {
		t.Errorf("events lack TIME_WAIT or hops")
	}
	if b, _ := run(); a != b {
		t.Error("two runs with one seed differ")
	}
}

// TestChainValidate: a chain's mistakes name the key at fault.
func TestChainValidate(t *testing.T) {
	for _, c := range []struct {
		key  string
		val  any
		want string
	}{
		{"tier.nobody.workers", 2, `no tier named "nobody" (tiers: nginx, app, redis)`},
		{"tier.app.concurrency", 3, "describes the load"},
		{"tier.app.app_time", "1ms", "a tier's own work is its server_time"},
		{"tier.app.dns", "-1ms", "tier.app.dns"},
		{"tier.app.tls", "1.4", "want one of"},
		{"tier.app.workers", 0, "out of range"},
		{"tier.app", 1, "tier.NAME.KEY"},
	} {
		s := stackScenario(t)
		err := s.Set(c.key, c.val)
		var pe *ParamError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(pe.Key, "tier.") {
			t.Errorf("Set(%s) = %v, want %q", c.key, err, c.want)
		}
	}
	s := stackScenario(t)
	set(t, &s, "tier.app.server_closes_first", 0.9, "tier.app.simultaneous_close", 0.2)
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "tier.app.simultaneous_close") {
		t.Errorf("shares over 1: %v", err)
	}
	s = stackScenario(t)
	set(t, &s, "tls", "1.3")
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "tier.NAME.tls") {
		t.Errorf("TLS on a chain's block, for every hop: %v", err)
	}
	s = stackScenario(t)
	set(t, &s, "dns", "10ms")
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "tier.NAME.dns") {
		t.Errorf("DNS on a chain's block, for every hop: %v", err)
	}
	// A hop's TLS is its tier's.
	s = stackScenario(t)
	set(t, &s, "tier.redis.tls", "1.2")
	if err := s.Validate(); err != nil || s.TierScenario(2).TLS != TLS12 || s.TierScenario(1).TLS != TLSNone {
		t.Errorf("tier.redis.tls = 1.2: %v; redis %q, app %q", err, s.TierScenario(2).TLS, s.TierScenario(1).TLS)
	}
	if err := s.AddTier("app"); err == nil {
		t.Error("two tiers named app")
	}
	for _, bad := range []string{"", "App", "1st", "_x", "web-1", "x y"} {
		if err := s.AddTier(bad); err == nil {
			t.Errorf("a tier named %q: no error", bad)
		}
	}
	if err := s.AddTier("db_2"); err != nil {
		t.Errorf("a tier named db_2: %v", err)
	}
	s = stackScenario(t)
	if v, ok := s.Get("tier.app.threads"); !ok || v != "8" {
		t.Errorf("Get(tier.app.threads) = %q, %v", v, ok)
	}
	// A tier takes the block's values unless it sets its own.
	s = stackScenario(t)
	set(t, &s, "rtt", "1ms", "tier.redis.rtt", "0.2ms")
	if a, r := s.TierScenario(1).RTT, s.TierScenario(2).RTT; a != time.Millisecond || r != 200*time.Microsecond {
		t.Errorf("rtt: app %v, redis %v", a, r)
	}
}

// TestChainTimeWaitTakenOver: when the server closes first, the client's
// port is free at once; once connect() comes back to it, the new SYN takes
// over the server's TIME_WAIT socket for that four-tuple. With 2000 ports,
// the server never holds more than 2000, and no connect fails. Each
// take-over is an event in the vocabulary (ReasonTakenOver).
func TestChainTimeWaitTakenOver(t *testing.T) {
	s := stackScenario(t)
	set(t, &s, "port_range", "40000-41999", "duration", "5s", "tier.app.server_closes_first", 1.0, "tier.app.simultaneous_close", 0.0,
		"tier.app.reuse", "pool")
	takenOver, bad := 0, 0
	sum := runChainT(t, s, func(e *Event) {
		if err := CheckEvent(e); err != nil {
			if bad++; bad <= 3 {
				t.Error(err)
			}
		}
		if e.Kind == KindTimeWaitEnd && e.Reason == ReasonTakenOver {
			takenOver++
		}
	})
	app := sum.Hop["app"]
	if takenOver != app.TimeWaitTakenOver {
		t.Errorf("%d taken-over events, %d taken over in the summary", takenOver, app.TimeWaitTakenOver)
	}
	if app.PortErrors != 0 || app.TimeWaitServer != app.Connects || app.TimeWaitClient != 0 {
		t.Fatalf("app hop %+v", app)
	}
	if app.TimeWaitServerPeak > 2000 || app.TimeWaitServerEnd > 2000 || app.TimeWaitTakenOver != app.TimeWaitServer-app.TimeWaitServerEnd {
		t.Errorf("server TIME_WAIT: %d entered, peak %d, %d at the end, %d taken over", app.TimeWaitServer, app.TimeWaitServerPeak, app.TimeWaitServerEnd, app.TimeWaitTakenOver)
	}
	if app.Connects < 3*2000 {
		t.Errorf("only %d connections: the range did not wrap", app.Connects)
	}
}

// TestChainOpenLoad: arrivals at a fixed rate, each on its own connection
// to the first tier (an open loop has no users to keep one).
func TestChainOpenLoad(t *testing.T) {
	s := stackScenario(t)
	set(t, &s, "load", "open", "rate", 500, "duration", "2s")
	sum := runChainT(t, s, nil)
	if sum.Requests != 1000 || sum.FailedRequests != 0 {
		t.Fatalf("%d requests, %d failed", sum.Requests, sum.FailedRequests)
	}
	if ng := sum.Hop["nginx"]; ng.Connects != 1000 || ng.Reused != 0 || ng.ClosedByClient != 1000 {
		t.Errorf("hop into nginx %+v", ng)
	}
	// 500 a second is below the app's pace: no queue to speak of.
	if q := sum.Tier["app"].Queue.P50; q > 0.5 {
		t.Errorf("app queue p50 %.3f ms", q)
	}
	if got := sum.ThroughputRPS; math.Abs(got-500) > 5 {
		t.Errorf("throughput %.1f", got)
	}
}

// TestChainTimeWaitReused: each hop searches its ports as connect() does
// (ports.go). With tcp_tw_reuse on loopback the app's search laps the
// range within seconds and takes over its own TIME_WAIT sockets to Redis
// where it lands on them; every socket that entered TIME_WAIT is still
// there or was taken over (nothing expires in 15 s). With 0, none is.
func TestChainTimeWaitReused(t *testing.T) {
	for _, reuse := range []int{2, 0} {
		s := stackScenario(t)
		set(t, &s, "tw_reuse", reuse, "duration", "15s")
		rd := runChainT(t, s, nil).Hop["redis"]
		if rd.PortErrors != 0 || rd.TimeWaitClientPeak+rd.TimeWaitReused != rd.TimeWaitClient {
			t.Errorf("tw_reuse %d: redis hop: peak %d + taken over %d != %d entered, %d port errors", reuse, rd.TimeWaitClientPeak, rd.TimeWaitReused, rd.TimeWaitClient, rd.PortErrors)
		}
		if (reuse == 2) != (rd.TimeWaitReused > 0) {
			t.Errorf("tw_reuse %d: %d TIME_WAIT sockets taken over", reuse, rd.TimeWaitReused)
		}
	}
}

// TestChainWorkerShares: a tier's new connections go to its workers by
// the measured shares. All of the users' connections on one nginx worker
// leave one keep-alive cache (the idle never pass one worker's N); all of
// nginx's connections on one of two app processes, each a request at a
// time, leave the other idle, and the app serves about half as many.
func TestChainWorkerShares(t *testing.T) {
	base := func() Scenario {
		s := stackScenario(t)
		set(t, &s, "tier.nginx.reuse", "upstream-keepalive", "tier.nginx.upstream_keepalive", 4, "tier.app.reuse", "pool",
			"tier.app.workers", 2, "tier.app.threads", 1, "client_keepalive", true, "duration", "2s")
		return s
	}
	even := runChainT(t, base(), nil)
	s := base()
	set(t, &s, "tier.nginx.worker_shares", []any{1.0, 0.0})
	one := runChainT(t, s, nil)
	if p := one.Hop["app"].IdlePeak; p > 4 {
		t.Errorf("users on one nginx worker: %d idle at once, beyond its keepalive 4", p)
	}
	if even.Hop["app"].IdlePeak <= 4 {
		t.Errorf("users on two nginx workers: %d idle at once, no more than one worker's keepalive 4 (the test shows nothing)", even.Hop["app"].IdlePeak)
	}
	s = base()
	set(t, &s, "tier.app.worker_shares", "1, 0")
	pinned := runChainT(t, s, nil)
	if r := float64(pinned.Requests) / float64(even.Requests); r < 0.4 || r > 0.6 {
		t.Errorf("app on one of two processes served %d requests, against %d on both: ratio %.2f, want about 0.5", pinned.Requests, even.Requests, r)
	}
}

// TestWorkerSharesValidate: worker_shares takes weights for a tier's
// workers; bad lists name the key.
func TestWorkerSharesValidate(t *testing.T) {
	for _, c := range []struct {
		val  any
		want string
	}{
		{[]any{0.5, -0.1}, "cannot be negative"},
		{[]any{0.0, 0.0}, "every share is 0"},
		{"0.5, x", "share 2"},
		{true, "want a list of shares"},
		{[]any{"a"}, "share 1"},
	} {
		s := stackScenario(t)
		err := s.Set("tier.app.worker_shares", c.val)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "tier.app.worker_shares") {
			t.Errorf("worker_shares = %v: %v, want %q", c.val, err, c.want)
		}
	}
	s := stackScenario(t)
	set(t, &s, "tier.app.worker_shares", "[0.5, 0.25, 0.25]")
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "3 shares for 1 workers") {
		t.Errorf("more shares than workers: %v", err)
	}
	if v, _ := s.Get("tier.app.worker_shares"); v != "[0.5, 0.25, 0.25]" {
		t.Errorf("Get = %q", v)
	}
	s = stackScenario(t)
	set(t, &s, "worker_shares", []any{1.0})
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "tier.NAME.worker_shares") {
		t.Errorf("worker_shares on a chain's block: %v", err)
	}
	s = Default()
	set(t, &s, "worker_shares", []float64{1, 1})
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "[[tier]] tables only") {
		t.Errorf("worker_shares without tiers: %v", err)
	}
	if got := pickShare([]float64{0, 3, 1}, 0.74); got != 1 {
		t.Errorf("pickShare(0.74) = %d, want 1", got)
	}
	if got := pickShare([]float64{0, 3, 1}, 0.76); got != 2 {
		t.Errorf("pickShare(0.76) = %d, want 2", got)
	}
	if got := pickShare([]float64{2, 0}, 0.999999); got != 0 {
		t.Errorf("pickShare at the top = %d, want 0", got)
	}
}
