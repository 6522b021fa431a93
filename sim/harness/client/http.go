package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/connlab/connlab/sim/harness/pki"
	"github.com/connlab/connlab/sim/harness/servers"
)

// callTrace follows one call: the phases of the connection it opened, if
// any, in curl's cumulative terms.
type callTrace struct {
	start   time.Time
	dns     *dnsCache
	sess    tls.ClientSessionCache
	conns   int  // GotConn calls: more than one means the call was sent again
	reused  bool // the connection that carried the call had been used before
	conn    *clientConn
	first   time.Time
	portErr bool
}

type callKey struct{}

// clientConn is a connection a client opened, with the times of its
// opening, so the call that first uses it can report them.
type clientConn struct {
	net.Conn
	raw       net.Conn // the TCP connection under TLS
	id        int
	localPort int
	dialStart time.Time
	dnsDone   time.Time
	connDone  time.Time
	tlsDone   time.Time
	handshake sim.Handshake
	w         *Worker
	reason    func() sim.CloseReason // why the client is closing, when it does
	peerEOF   atomic.Bool
	closed    atomic.Bool
	closeOnce sync.Once
	// lazy: curl's semantics. curl does not watch idle connections: when
	// the server closes one, its socket waits (in CLOSE_WAIT) until the
	// handle next looks at it. Go's Transport closes it at once, so its
	// Close only marks the connection dead; the handle closes it later
	// (forced). Pools (Go, nginx) close at once.
	lazy   bool
	forced atomic.Bool
}

func (c *clientConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && n == 0 {
		c.peerEOF.Store(true)
	}
	return n, err
}

func (c *clientConn) Close() error {
	c.closed.Store(true)
	if c.lazy && c.peerEOF.Load() && !c.forced.Load() {
		return nil // dead; the handle closes it when it next looks
	}
	c.closeOnce.Do(func() {
		by, reason := sim.SideClient, c.reason()
		if c.peerEOF.Load() {
			by, reason = sim.SideServer, sim.ReasonDead
		}
		c.w.Emit(&sim.Event{Kind: sim.KindClose, At: c.w.since(time.Now()), Conn: c.id, LocalPort: c.localPort, By: by, Reason: reason})
	})
	if c.peerEOF.Load() && c.raw != nil {
		// As curl does, no close_notify once the server has closed: a
		// record sent to a closed socket is answered with a reset, which
		// takes the server's TIME_WAIT away.
		err := c.raw.Close()
		c.Conn.Close() // its close_notify finds the socket closed
		return err
	}
	if _, isTLS := c.Conn.(*tls.Conn); isTLS && c.raw != nil {
		netem.CorkForClose(c.raw) // the close_notify leaves with the FIN
	}
	return c.Conn.Close()
}

// HTTPClient is one curl handle, share handle or pool: the connections it
// keeps, and, through the call's context, the DNS cache and TLS sessions of
// the handle that holds them (they may belong to different handles:
// curl_share_init_persistent([DNS]) keeps only DNS).
//
// It keeps connections the way the model does (sim/pool.go), with Go's
// http.Transport speaking HTTP/1.1 on each one: the most recently used idle
// connection is tried first; one the server has closed (its FIN arrived) is
// dropped; one idle longer than max_idle_age or older than max_lifetime is
// closed by the client when it is next looked at (curl checks then, it has
// no timer); a pool waits (or fails) at pool_max and closes a returning
// connection beyond pool_max_idle; nginx's keepalive N closes the least
// recently used idle connection beyond N.
type HTTPClient struct {
	w    *Worker
	dns  dnsCache
	sess tls.ClientSessionCache

	mu      sync.Mutex
	idle    []*entry // most recently used last
	open    int      // entries open, idle or in use
	waiters []chan *entry
	closed  bool
}

// entry is one kept connection: a Transport that holds at most it.
type entry struct {
	h        *HTTPClient
	tr       *http.Transport
	conn     atomic.Pointer[clientConn]
	created  time.Time
	lastUsed time.Time
	reason   atomic.Value // why the client closes it, when it does
}

func (e *entry) closeReason() sim.CloseReason {
	if r, ok := e.reason.Load().(sim.CloseReason); ok {
		return r
	}
	return sim.ReasonDead
}

// closeBy closes the entry's connection from the client side.
func (e *entry) closeBy(reason sim.CloseReason) {
	e.reason.Store(reason)
	if c := e.conn.Load(); c != nil {
		c.forced.Store(true)
		c.Close() // now: the Transport may not have taken the connection back yet
	}
	e.tr.CloseIdleConnections()
}

// dead: the connection was closed (Go's Transport closes it as soon as the
// server's FIN arrives) or never opened.
func (e *entry) dead() bool {
	c := e.conn.Load()
	return c == nil || c.closed.Load()
}

// NewHTTPClient makes a curl handle (or share handle, or pool) of w's.
func (w *Worker) NewHTTPClient() *HTTPClient {
	s := &w.cfg.Scenario
	h := &HTTPClient{w: w, dns: dnsCache{timeout: s.DNSCacheTimeout}}
	if s.TLSResume {
		h.sess = tls.NewLRUClientSessionCache(64)
	}
	return h
}

func (h *HTTPClient) newEntry() *entry {
	e := &entry{h: h, created: time.Now()}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := h.dial(ctx, e, addr)
		if err != nil {
			return nil, err
		}
		e.conn.Store(c)
		return c, nil
	}
	e.tr = &http.Transport{
		DialContext:         dial,
		DialTLSContext:      dial,
		MaxIdleConnsPerHost: 1,
		DisableCompression:  true,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1 only
	}
	return e
}

var errPoolFull = errors.New(string(sim.ErrorPoolFull))

// acquire finds the call a connection: a kept one, a place in the pool's
// queue, or a new one (dialled by the Transport when the call is sent).
func (h *HTTPClient) acquire(ctx context.Context) (*entry, error) {
	s := &h.w.cfg.Scenario
	h.mu.Lock()
	now := time.Now()
	for n := len(h.idle); n > 0; n = len(h.idle) {
		e := h.idle[n-1]
		h.idle = h.idle[:n-1]
		switch {
		case e.dead():
			h.open--
			e.closeBy(sim.ReasonDead) // curl finds the server closed it, and closes its side
		case s.MaxIdleAge > 0 && now.Sub(e.lastUsed) > s.MaxIdleAge:
			h.open--
			e.closeBy(sim.ReasonMaxIdleAge)
		case s.MaxLifetime > 0 && now.Sub(e.created) > s.MaxLifetime:
			h.open--
			e.closeBy(sim.ReasonMaxLifetime)
		default:
			h.mu.Unlock()
			return e, nil
		}
	}
	if s.Reuse == sim.ReusePool && s.PoolMax > 0 && h.open >= s.PoolMax {
		if s.PoolFull == sim.PoolFullError {
			h.mu.Unlock()
			return nil, errPoolFull
		}
		ch := make(chan *entry, 1)
		h.waiters = append(h.waiters, ch)
		h.mu.Unlock()
		select {
		case e := <-ch:
			if e == nil { // a connection closed: open a new one in its place
				return h.newEntry(), nil
			}
			return e, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	h.open++
	h.mu.Unlock()
	return h.newEntry(), nil
}

// release returns e after a call: to a waiting call, to the idle list, or
// closed when the handle keeps no more.
func (h *HTTPClient) release(e *entry) {
	s := &h.w.cfg.Scenario
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.dead() {
		e.closeBy(sim.ReasonDead)
		if len(h.waiters) > 0 {
			h.waiters[0] <- nil // the slot passes to the waiting call
			h.waiters = h.waiters[1:]
			return
		}
		h.open--
		return
	}
	if h.closed {
		h.open--
		e.closeBy(sim.ReasonEndOfRequest)
		return
	}
	if len(h.waiters) > 0 {
		h.waiters[0] <- e
		h.waiters = h.waiters[1:]
		return
	}
	if s.Reuse == sim.ReusePool && s.PoolMaxIdle > 0 && len(h.idle) >= s.PoolMaxIdle {
		h.open--
		e.closeBy(sim.ReasonIdleFull)
		return
	}
	e.lastUsed = time.Now()
	h.idle = append(h.idle, e)
	if s.Reuse == sim.ReuseUpstreamKeepalive && len(h.idle) > s.UpstreamKeepalive {
		lru := h.idle[0]
		h.idle = h.idle[1:]
		h.open--
		lru.closeBy(sim.ReasonEvict)
	}
}

// CloseIdle ends the handle: its idle connections are closed by the
// client, for reason (the close events' reason).
func (h *HTTPClient) CloseIdle(reason sim.CloseReason) {
	h.mu.Lock()
	idle := h.idle
	h.idle = nil
	h.open -= len(idle)
	h.mu.Unlock()
	for _, e := range idle {
		e.closeBy(reason)
	}
}

// dial opens a connection for the call in ctx: DNS through the harness's
// server (cached by the call's DNS owner), TCP to loopback with one round
// trip, then TLS with the call's TLS owner's session cache.
func (h *HTTPClient) dial(ctx context.Context, e *entry, addr string) (*clientConn, error) {
	w := h.w
	s := &w.cfg.Scenario
	ct, _ := ctx.Value(callKey{}).(*callTrace)
	dnsC, sess := &h.dns, h.sess
	if ct != nil {
		dnsC, sess = ct.dns, ct.sess
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	c := &clientConn{w: w, reason: e.closeReason, dialStart: time.Now(), lazy: s.Reuse != sim.ReusePool && s.Reuse != sim.ReuseUpstreamKeepalive}
	ip, err := w.res.lookup(ctx, dnsC, host)
	if err != nil {
		return nil, err
	}
	c.dnsDone = time.Now()
	raw, ready, err := netem.Dialer{RTT: s.RTT}.DialGated(ctx, "tcp", net.JoinHostPort(ip, port))
	if err != nil {
		if errors.Is(err, syscall.EADDRNOTAVAIL) && ct != nil {
			ct.portErr = true
		}
		return nil, err
	}
	c.connDone = ready
	c.localPort = raw.LocalAddr().(*net.TCPAddr).Port
	c.id = w.nextConn()
	raw = servers.ClientPath(s.RTT).Wrap(raw) // the server→client half is held here
	c.Conn, c.raw = raw, raw
	w.Emit(&sim.Event{Kind: sim.KindOpen, At: w.since(c.dnsDone), Conn: c.id, LocalPort: c.localPort})
	if s.TLS != sim.TLSNone {
		v := servers.TLSVersion(s.TLS)
		cfg := &tls.Config{ServerName: pki.APIHost, RootCAs: w.roots, MinVersion: v, MaxVersion: v,
			CurvePreferences: servers.Curves, ClientSessionCache: sess}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		c.tlsDone = time.Now()
		c.handshake = sim.HandshakeFull
		if tc.ConnectionState().DidResume {
			c.handshake = sim.HandshakeResumed
		}
		c.Conn = tc
	}
	return c, nil
}

// HTTPCall makes call number n of request req on client h, with the DNS
// cache and TLS sessions of dnsO and tlsO, and returns its event; the
// response body goes to body (nil: discarded).
func (w *Worker) HTTPCall(ctx context.Context, h, dnsO, tlsO *HTTPClient, req, n int, body io.Writer) *sim.Event {
	s := &w.cfg.Scenario
	ct := &callTrace{dns: &dnsO.dns, sess: tlsO.sess}
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			ct.conns++
			ct.reused = info.Reused
			ct.conn, _ = info.Conn.(*clientConn)
		},
		GotFirstResponseByte: func() { ct.first = time.Now() },
	}
	method, reqBody := http.MethodGet, io.Reader(nil)
	if !s.RetryOnRace {
		// Go sends a request again on a fresh connection only if it may
		// replay it; a POST it may not (the go-post variant).
		method, reqBody = http.MethodPost, bytes.NewReader([]byte("x"))
	}
	ctx = context.WithValue(httptrace.WithClientTrace(ctx, trace), callKey{}, ct)
	r, _ := http.NewRequestWithContext(ctx, method, w.url, reqBody)
	if s.Reuse == sim.ReuseNone && s.Closer == sim.SideServer {
		r.Close = true
	}
	ct.start = time.Now()
	ent, err := h.acquire(ctx)
	if err == nil {
		var resp *http.Response
		resp, err = ent.tr.RoundTrip(r)
		if err == nil {
			if body == nil {
				body = io.Discard
			}
			_, err = io.Copy(body, resp.Body)
			resp.Body.Close()
		}
		h.release(ent)
	}
	end := time.Now()
	e := &sim.Event{Kind: sim.KindCall, At: w.since(end), Req: req, Call: n, Worker: w.cfg.Worker,
		Start: w.since(ct.start), Total: end.Sub(ct.start), Retried: ct.conns > 1}
	if err != nil {
		switch {
		case ct.portErr:
			e.Error = string(sim.ErrorNoPort) + " [" + err.Error() + "]"
			w.Emit(&sim.Event{Kind: sim.KindPortError, At: e.At, Req: req, Call: n, Worker: e.Worker, Error: e.Error})
		case ct.conns > 0 && ct.reused:
			e.Error = string(sim.ErrorRace) + " [" + err.Error() + "]"
			e.Retried = true
		default:
			e.Error = err.Error()
		}
		e.Start, e.Total = w.since(ct.start), end.Sub(ct.start)
		return e
	}
	e.Reused = ct.reused
	if c := ct.conn; c != nil {
		e.Conn, e.LocalPort = c.id, c.localPort
		if !ct.reused {
			e.NewConn = true
			e.Handshake = c.handshake
			rel := func(t time.Time) time.Duration { return max(0, t.Sub(ct.start)) }
			e.NameLookup, e.Connect = rel(c.dnsDone), rel(c.connDone)
			if !c.tlsDone.IsZero() {
				e.AppConnect = rel(c.tlsDone)
			}
		}
	}
	if !ct.first.IsZero() {
		e.StartTransfer = ct.first.Sub(ct.start)
	}
	return e
}
