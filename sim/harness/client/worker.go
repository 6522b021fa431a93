// Package client holds the instrumented clients of a real run: curl-like
// HTTP handles and go-redis clients whose state lives for a call, a
// request or the worker process, as the scenario says, each call reported
// as a sim.Event in curl's cumulative phases.
package client

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/connlab/connlab/sim/harness/pki"
	"github.com/connlab/connlab/sim/harness/wire"
)

// A Worker is the client side of one PHP-like worker process (PHP-FPM
// child, php -S worker): it serves the web requests it is handed, one at a
// time (threads = 1) or several, and owns the client state whose lifetime
// is the process: persistent share handles by option set, or a pool.
type Worker struct {
	cfg   wire.WorkerConfig
	sink  func(*sim.Event) // where events go: the process's stdout, or the proxy's lab process
	res   resolver
	roots *x509.CertPool
	url   string

	base    time.Time // the run's start, on this process's monotonic clock
	baseSet sync.Once
	baseFn  func() time.Time // the run's start, for a Worker inside the lab process (SetBaseFunc)
	conns   atomic.Int64

	mu         sync.Mutex
	persistent map[uint8]*HTTPClient // curl_share_init_persistent handles, by option mask
	pool       *HTTPClient           // reuse = "pool"
	redis      *redisClient          // reuse = "pool", Redis setup
	masks      []uint8
}

func (w *Worker) since(t time.Time) time.Duration {
	if w.baseFn != nil {
		return t.Sub(w.baseFn())
	}
	return t.Sub(w.base)
}
func (w *Worker) nextConn() int { return int(w.conns.Add(1)) }

// Emit sends e where the worker's events go.
func (w *Worker) Emit(e *sim.Event) { w.sink(e) }

// Scenario is the scenario the worker serves.
func (w *Worker) Scenario() *sim.Scenario { return &w.cfg.Scenario }

// Reuses are the reuse policies the real clients implement (Serve,
// serveRedis): a policy the model gains needs its real counterpart here.
var Reuses = []sim.Reuse{sim.ReuseNone, sim.ReuseRequest, sim.ReuseProcess, sim.ReusePool, sim.ReuseUpstreamKeepalive}

// NewWorker makes a worker for cfg (Setup http or redis), whose events go
// to sink. Every address in cfg must be on loopback.
func NewWorker(cfg wire.WorkerConfig, sink func(*sim.Event)) (*Worker, error) {
	if !slices.Contains(Reuses, cfg.Scenario.Reuse) {
		return nil, fmt.Errorf("reuse %q: the harness's clients do not implement it", cfg.Scenario.Reuse)
	}
	w := &Worker{cfg: cfg, sink: sink, res: resolver{server: cfg.DNS, hold: cfg.Scenario.DNS}, persistent: map[uint8]*HTTPClient{}, base: time.Now()}
	if cfg.DNS != "" {
		if err := netem.CheckLoopback(cfg.DNS); err != nil {
			return nil, err
		}
	}
	for _, set := range cfg.Scenario.ShareSets {
		m, err := sim.ShareMask(set)
		if err != nil {
			m = sim.ShareDNS | sim.ShareConnect | sim.ShareSSLSession
		}
		w.masks = append(w.masks, m)
	}
	switch cfg.Setup {
	case sim.SetupHTTP:
		if err := netem.CheckLoopback(cfg.Upstream); err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(cfg.Upstream)
		scheme := "https"
		if cfg.Scenario.TLS == sim.TLSNone {
			scheme = "http"
		}
		w.url = scheme + "://" + net.JoinHostPort(pki.APIHost, port) + "/v1/geocode"
		if scheme == "https" {
			r, err := pki.CAPool(cfg.CAPEM)
			if err != nil {
				return nil, err
			}
			w.roots = r
		}
	case sim.SetupRedis:
		if err := netem.CheckLoopback(cfg.Redis); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("harness: worker: unknown setup %q", cfg.Setup)
	}
	return w, nil
}

// SetBase fixes the run's start, once, from the wall-clock time the lab
// process sent (the processes share the system clock, not Go's monotonic
// one).
func (w *Worker) SetBase(t0 int64) {
	w.baseSet.Do(func() { w.base = wire.WallTime(t0) })
}

// SetBaseFunc makes base give the run's start, for a worker inside the lab
// process, whose start is set after the worker is made.
func (w *Worker) SetBaseFunc(base func() time.Time) { w.baseFn = base }

// persistentFor returns the worker's persistent share handle for an option
// mask: the same set (in any order) is the same handle.
func (w *Worker) persistentFor(mask uint8) *HTTPClient {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.persistent[mask]
	if h == nil {
		h = w.NewHTTPClient()
		w.persistent[mask] = h
	}
	return h
}

func (w *Worker) poolClient() *HTTPClient {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pool == nil {
		w.pool = w.NewHTTPClient()
	}
	return w.pool
}

// Serve runs web request req: app_time, then its calls one after
// another. It reports whether a call failed.
func (w *Worker) Serve(ctx context.Context, req int) bool {
	s := &w.cfg.Scenario
	if s.AppTime > 0 {
		netem.SleepUntil(time.Now().Add(s.AppTime))
	}
	if w.cfg.Setup == sim.SetupRedis {
		return w.serveRedis(ctx, req)
	}
	var reqC *HTTPClient
	request := func() *HTTPClient {
		if reqC == nil {
			reqC = w.NewHTTPClient()
		}
		return reqC
	}
	mask := w.masks[(req-1)%len(w.masks)]
	failed := false
	for n := 1; n <= s.CallsPerRequest; n++ {
		var connO, dnsO, tlsO *HTTPClient
		switch s.Reuse {
		case sim.ReuseNone:
			c := w.NewHTTPClient()
			connO, dnsO, tlsO = c, c, c
		case sim.ReuseProcess:
			p := w.persistentFor(mask)
			pick := func(bit uint8) *HTTPClient {
				if mask&bit != 0 {
					return p
				}
				return request()
			}
			connO, dnsO, tlsO = pick(sim.ShareConnect), pick(sim.ShareDNS), pick(sim.ShareSSLSession)
		case sim.ReusePool, sim.ReuseUpstreamKeepalive:
			p := w.poolClient()
			connO, dnsO, tlsO = p, p, p
		default: // sim.ReuseRequest (NewWorker takes only Reuses)
			c := request()
			connO, dnsO, tlsO = c, c, c
		}
		e := w.HTTPCall(ctx, connO, dnsO, tlsO, req, n, nil)
		w.Emit(e)
		if s.Reuse == sim.ReuseNone {
			connO.CloseIdle(sim.ReasonEndOfCall)
		}
		if e.Error != "" {
			failed = true
			break
		}
	}
	if reqC != nil {
		reqC.CloseIdle(sim.ReasonEndOfRequest)
	}
	return failed
}

// OpenPools makes what the process keeps from its start: a Redis
// worker's pool (redis-py's ConnectionPool, made at start-up as the view's
// module makes it).
func (w *Worker) OpenPools() {
	if s := &w.cfg.Scenario; w.cfg.Setup == sim.SetupRedis && (s.Reuse == sim.ReusePool || s.Reuse == sim.ReuseUpstreamKeepalive) {
		w.redisPool()
	}
}

// Exit closes what the process keeps, as the kernel would at its exit, but
// with close events.
func (w *Worker) Exit() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.persistent {
		h.CloseIdle(sim.ReasonWorkerExit)
	}
	if w.pool != nil {
		w.pool.CloseIdle(sim.ReasonWorkerExit)
	}
	if w.redis != nil {
		w.redis.close()
	}
}

// redisKey is the key request n writes and reads back.
func redisKey(n int) string { return "test:" + strconv.Itoa(n) }
