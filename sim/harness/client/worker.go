package harness

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/connlab/connlab/sim"
)

// workerConfig is what a worker process is told when it starts.
type workerConfig struct {
	Setup    string       `json:"setup"`
	Scenario sim.Scenario `json:"scenario"`
	Worker   int          `json:"worker"` // 1-based
	Upstream string       `json:"upstream,omitempty"`
	DNS      string       `json:"dns,omitempty"`
	Redis    string       `json:"redis,omitempty"`
	CAPEM    []byte       `json:"ca,omitempty"`
	// Warm, the harness's certificates, asks the worker to warm its code up
	// before it says it is ready (see warmUp).
	Warm *Certs `json:"warm,omitempty"`
	// Nice: the process was started at the lowest CPU priority
	// (startLowPriority) and takes the highest when ready. A worker replacing one during the run (pm.max_requests, CLI
	// mode) otherwise starts up on the CPU the requests in flight need: a
	// reused call next to a starting worker came out 1–4 ms late. Set only
	// where the lab process could raise its own priority.
	Nice bool `json:"nice,omitempty"`
}

// A worker is one PHP-like worker process (PHP-FPM child, php -S worker):
// it serves the web requests the lab process hands it, one at a time
// (threads = 1) or several, and owns the client state whose lifetime is the
// process: persistent share handles by option set, or a pool.
type worker struct {
	cfg   workerConfig
	sink  func(*sim.Event) // where events go: the process's stdout, or the proxy's lab process
	res   resolver
	roots *x509.CertPool
	url   string

	base    time.Time // the run's start, on this process's monotonic clock
	baseSet sync.Once
	baseFn  func() time.Time // the run's start, for a worker inside the lab process
	conns   atomic.Int64

	mu         sync.Mutex
	persistent map[uint8]*httpClient // curl_share_init_persistent handles, by option mask
	pool       *httpClient           // reuse = "pool"
	redis      *redisClient          // reuse = "pool", Redis setup
	masks      []uint8
}

func (w *worker) since(t time.Time) time.Duration {
	if w.baseFn != nil {
		return t.Sub(w.baseFn())
	}
	return t.Sub(w.base)
}
func (w *worker) nextConn() int     { return int(w.conns.Add(1)) }
func (w *worker) emit(e *sim.Event) { w.sink(e) }

func newWorker(cfg workerConfig, sink func(*sim.Event)) (*worker, error) {
	w := &worker{cfg: cfg, sink: sink, res: resolver{server: cfg.DNS, hold: cfg.Scenario.DNS}, persistent: map[uint8]*httpClient{}, base: time.Now()}
	if cfg.DNS != "" {
		if err := CheckLoopback(cfg.DNS); err != nil {
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
	case SetupHTTP:
		if err := CheckLoopback(cfg.Upstream); err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(cfg.Upstream)
		scheme := "https"
		if cfg.Scenario.TLS == "none" {
			scheme = "http"
		}
		w.url = scheme + "://" + net.JoinHostPort(APIHost, port) + "/v1/geocode"
		if scheme == "https" {
			r, err := roots(cfg.CAPEM)
			if err != nil {
				return nil, err
			}
			w.roots = r
		}
	case SetupRedis:
		if err := CheckLoopback(cfg.Redis); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("harness: worker: unknown setup %q", cfg.Setup)
	}
	return w, nil
}

// setBase fixes the run's start from the wall-clock time the lab process
// sent (the processes share the system clock, not Go's monotonic one).
func (w *worker) setBase(t0 int64) {
	w.baseSet.Do(func() { w.base = wallTime(t0) })
}

// persistentFor returns the worker's persistent share handle for an option
// mask: the same set (in any order) is the same handle.
func (w *worker) persistentFor(mask uint8) *httpClient {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.persistent[mask]
	if h == nil {
		h = w.newHTTPClient()
		w.persistent[mask] = h
	}
	return h
}

func (w *worker) poolClient() *httpClient {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pool == nil {
		w.pool = w.newHTTPClient()
	}
	return w.pool
}

// serve runs one web request: app_time, then its calls one after another.
// It reports whether a call failed.
func (w *worker) serve(ctx context.Context, j *job) bool {
	s := &w.cfg.Scenario
	if s.AppTime > 0 {
		SleepUntil(time.Now().Add(s.AppTime))
	}
	if w.cfg.Setup == SetupRedis {
		return w.serveRedis(ctx, j)
	}
	var reqC *httpClient
	request := func() *httpClient {
		if reqC == nil {
			reqC = w.newHTTPClient()
		}
		return reqC
	}
	mask := w.masks[(j.Req-1)%len(w.masks)]
	failed := false
	for n := 1; n <= s.CallsPerRequest; n++ {
		var connO, dnsO, tlsO *httpClient
		switch s.Reuse {
		case "none":
			c := w.newHTTPClient()
			connO, dnsO, tlsO = c, c, c
		case "process":
			p := w.persistentFor(mask)
			pick := func(bit uint8) *httpClient {
				if mask&bit != 0 {
					return p
				}
				return request()
			}
			connO, dnsO, tlsO = pick(sim.ShareConnect), pick(sim.ShareDNS), pick(sim.ShareSSLSession)
		case "pool", "upstream-keepalive":
			p := w.poolClient()
			connO, dnsO, tlsO = p, p, p
		default: // request
			c := request()
			connO, dnsO, tlsO = c, c, c
		}
		e := w.httpCall(ctx, connO, dnsO, tlsO, j.Req, n, nil)
		w.emit(e)
		if s.Reuse == "none" {
			connO.closeIdle("end-of-call")
		}
		if e.Error != "" {
			failed = true
			break
		}
	}
	if reqC != nil {
		reqC.closeIdle("end-of-request")
	}
	return failed
}

// exit closes what the process keeps, as the kernel would at its exit, but
// with close events.
func (w *worker) exit() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.persistent {
		h.closeIdle("worker-exit")
	}
	if w.pool != nil {
		w.pool.closeIdle("worker-exit")
	}
	if w.redis != nil {
		w.redis.close()
	}
}

// workerMain is a worker process: a config line, then jobs, on stdin;
// events and "done" lines on stdout. It returns when stdin ends or a job
// says exit, after the requests in hand.
func workerMain(stdin io.Reader, stdout io.Writer) error {
	out := newLineWriter(stdout)
	lr := newLineReader(stdin)
	first, err := lr.next()
	if err != nil {
		return err
	}
	var cfg workerConfig
	if err := json.Unmarshal(first.Config, &cfg); err != nil {
		return fmt.Errorf("harness: worker: bad config: %v", err)
	}
	w, err := newWorker(cfg, func(e *sim.Event) { out.event(e) })
	if err != nil {
		out.send(&msg{Error: err.Error()})
		return err
	}
	if cfg.Warm != nil {
		if err := warmUp(cfg); err != nil {
			out.send(&msg{Error: err.Error()})
			return err
		}
	}
	if s := &cfg.Scenario; cfg.Setup == SetupRedis && (s.Reuse == "pool" || s.Reuse == "upstream-keepalive") {
		w.redisPool() // made at start-up, as the view's pool is
	}
	settle()
	if cfg.Nice {
		raisePriority()
	}
	if err := out.send(&msg{Ready: true}); err != nil {
		return err
	}
	linger := false
	ctx := context.Background()
	var wg sync.WaitGroup
	for {
		m, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if m.Job == nil {
			continue
		}
		j := m.Job
		w.setBase(j.T0)
		if j.Exit {
			linger = j.Linger
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if j.At != 0 {
				SleepUntil(wallTime(j.At)) // the request arrives now
			}
			failed := w.serve(ctx, j)
			out.send(&msg{Done: j.Req, Fail: failed, End: time.Now().UnixNano()})
		}()
	}
	wg.Wait()
	if cfg.Nice {
		lowerPriority() // it winds down behind the requests of the others
	}
	w.exit()
	err = out.flush()
	for linger {
		if _, e := lr.next(); e != nil {
			break // stdin ended: the run is over
		}
	}
	return err
}

// redisKey is the key request n writes and reads back.
func redisKey(n int) string { return "test:" + strconv.Itoa(n) }

// warmUp runs a few calls of the worker's kind against a private server in
// this process, with no delay, before the worker says it is ready. A fresh
// process pays for its first TLS handshake, HTTP exchange or Redis command
// with page faults and lazy initialisation (a millisecond or more); a
// worker that has served for a while (PHP-FPM's) does not, and neither does
// the model. The private server and clients are dropped afterwards: no
// connection, session or DNS answer carries over.
func warmUp(cfg workerConfig) error {
	s := cfg.Scenario
	s.RTT, s.DNS, s.ServerTime, s.ServerConnTime, s.AppTime = 0, 0, 0, 0, 0
	s.KeepaliveTimeout, s.Reuse = 0, "request"
	wc := workerConfig{Setup: cfg.Setup, Scenario: s, Worker: cfg.Worker, CAPEM: cfg.Warm.CAPEM}
	switch cfg.Setup {
	case SetupHTTP:
		up, err := StartUpstream("", upstreamConfig(&s, 0, ownClients), cfg.Warm, nil)
		if err != nil {
			return err
		}
		defer up.Close()
		wc.Upstream = up.Addr()
		if cfg.DNS != "" { // the lookups too: a first one came out 0.5 ms slow
			d, err := startDNS("", 0)
			if err != nil {
				return err
			}
			defer d.Close()
			wc.DNS = d.addr
		}
		w, err := newWorker(wc, func(*sim.Event) {})
		if err != nil {
			return err
		}
		for i := range 3 {
			h := w.newHTTPClient()
			for n := 1; n <= 2; n++ {
				if e := w.httpCall(context.Background(), h, h, h, i+1, n, nil); e.Error != "" {
					return fmt.Errorf("harness: worker warm-up: %s", e.Error)
				}
			}
			h.closeIdle("warm-up")
		}
	case SetupRedis:
		r, err := startRedis(false, 0)
		if err != nil {
			return err
		}
		defer r.Close()
		wc.Redis = r.addr
		w, err := newWorker(wc, func(*sim.Event) {})
		if err != nil {
			return err
		}
		for i := range 3 {
			w.serveRedis(context.Background(), &job{Req: i + 1})
		}
	}
	return nil
}
