package servers

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/connlab/connlab/sim/harness/pki"
)

// UpstreamConfig is the upstream server's behaviour, from the scenario.
type UpstreamConfig struct {
	TLS               sim.TLSVersion
	Tickets           bool // TLS session tickets (tls_resume)
	Cert              sim.Cert
	KeepaliveTimeout  time.Duration
	KeepaliveRequests int
	ServerTime        time.Duration
	Jitter            float64
	Concurrency       int // requests worked on at once (0: unlimited)
	ConnTime          time.Duration
	ResponseBytes     int
	// Closer is the side that closes first when a connection is not kept:
	// the server closes right after the response, the client's side
	// waits for the client's FIN.
	Closer sim.Side
	// Path is the emulated network, applied at the server's end.
	Path netem.Path
	Seed uint64
}

// Clients says who calls a server, and so at which end of each connection
// the emulated path is applied.
type Clients int

const (
	// OwnClients are the harness's own clients (worker processes, the Go
	// proxy): each holds what it receives for RTT/2 (ClientPath at its
	// end), and the server delays only what it receives.
	OwnClients Clients = iota
	// ForeignClients (nginx, a raw test client): the server's end delays
	// both directions; the client pays its own wake-up.
	ForeignClients
	// ForeignDialers (curl through sim upstream): ForeignClients whose
	// dialer is not the harness's either, so the TCP handshake's round trip
	// is charged on the first bytes that arrive.
	ForeignDialers
)

// ConfigFor derives the upstream's configuration from a scenario, with the
// emulated path of rtt split between the ends as who requires.
func ConfigFor(s *sim.Scenario, rtt time.Duration, who Clients) UpstreamConfig {
	c := UpstreamConfig{
		TLS: s.TLS, Tickets: s.TLSResume, Cert: s.Cert,
		KeepaliveTimeout: s.KeepaliveTimeout, KeepaliveRequests: s.KeepaliveRequests,
		ServerTime: s.ServerTime, Jitter: s.ServerJitter, Concurrency: s.ServerConcurrency,
		ConnTime: s.ServerConnTime, ResponseBytes: s.ResponseBytes, Closer: s.Closer,
		Path: netem.Path{In: rtt / 2, SlowStart: &netem.SlowStart{MSS: s.MSS, InitCwnd: s.InitCwnd, RTT: rtt, AfterIdle: s.SlowStartAfterIdle}},
	}
	if who != OwnClients {
		c.Path.Out = rtt / 2
	}
	if who == ForeignDialers {
		c.Path.FirstExtra = rtt
	}
	return c
}

// ClientPath is the path one of the harness's own clients applies at its
// end of a connection to a server started for OwnClients: what it receives
// waits RTT/2 from the kernel's receive time.
func ClientPath(rtt time.Duration) netem.Path { return netem.Path{In: rtt / 2} }

// Upstream is the HTTPS (or plain HTTP) server the labs call: crypto/tls
// with the harness's certificates, HTTP/1.1 with nginx's keep-alive
// semantics (an idle connection is closed after keepalive_timeout; after
// keepalive_requests requests the response says Connection: close and the
// server closes), a fixed amount of work per request, and the emulated path
// at its end of every connection.
type Upstream struct {
	cfg   UpstreamConfig
	conns *connSet
	tlsC  *tls.Config
	work  *workQueue
	emit  func(e *sim.Event) // socket events (server-side closes); may be nil

	mu  sync.Mutex
	rng *rand.Rand

	// Stats.
	Accepted int
	Requests int
}

// StartUpstream listens on addr ("" for 127.0.0.1 and a port the kernel
// picks) and serves until Close.
func StartUpstream(addr string, cfg UpstreamConfig, certs *pki.Certs, emit func(*sim.Event)) (*Upstream, error) {
	u := &Upstream{cfg: cfg, emit: emit, rng: rand.New(rand.NewPCG(cfg.Seed, 7))}
	if cfg.TLS != sim.TLSNone {
		cert, err := certs.ServerCert(cfg.Cert)
		if err != nil {
			return nil, err
		}
		v := TLSVersion(cfg.TLS)
		u.tlsC = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: v, MaxVersion: v,
			CurvePreferences: ServerCurves, SessionTicketsDisabled: !cfg.Tickets}
	}
	u.work = newWorkQueue(cfg.Concurrency)
	ln, err := netem.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	u.conns = serveConns(ln, cfg.Path, func(c net.Conn, n int) {
		u.mu.Lock()
		u.Accepted++
		u.mu.Unlock()
		u.serveConn(c, n)
	})
	return u, nil
}

// Addr is the address the upstream listens on.
func (u *Upstream) Addr() string { return u.conns.ln.Addr().String() }

// Port is the port the upstream listens on.
func (u *Upstream) Port() int { return u.conns.ln.Addr().(*net.TCPAddr).Port }

// Close stops the upstream and every connection, and waits for them.
func (u *Upstream) Close() { u.conns.close() }

func (u *Upstream) closeEvent(c net.Conn, reason sim.CloseReason) {
	if u.emit == nil {
		return
	}
	port := 0
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		port = a.Port
	}
	u.emit(&sim.Event{Kind: sim.KindClose, LocalPort: port, By: sim.SideServer, Reason: reason})
}

// serveConn serves one connection: TLS handshake, then requests until the
// connection is closed by either side.
func (u *Upstream) serveConn(raw net.Conn, id int) {
	conn := raw
	// Closing raw, never the tls.Conn, sends no close_notify: nginx sends
	// none after a timeout or once the client has closed, and a record
	// sent after the client's FIN would be answered with a reset, which
	// takes away the client's TIME_WAIT.
	defer raw.Close()
	if u.tlsC != nil {
		tc := tls.Server(raw, u.tlsC)
		if err := tc.Handshake(); err != nil {
			return
		}
		conn = tc
	}
	br := bufio.NewReaderSize(conn, 8<<10)
	var out []byte
	for n := 0; ; {
		if n > 0 && u.cfg.KeepaliveTimeout > 0 {
			conn.SetReadDeadline(time.Now().Add(u.cfg.KeepaliveTimeout))
		} else {
			conn.SetReadDeadline(time.Time{})
		}
		req, err := http.ReadRequest(br)
		arrived := time.Now()
		if dc, ok := raw.(*netem.Conn); ok && err == nil {
			// The work starts when the request arrived: parsing it is part
			// of the server's time, not added to it.
			arrived = dc.Arrived()
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				u.closeEvent(raw, sim.ReasonIdleTimeout)
			}
			return
		}
		conn.SetReadDeadline(time.Time{})
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
		n++
		u.mu.Lock()
		u.Requests++
		jit := 0.0
		if u.cfg.Jitter > 0 {
			jit = (2*u.rng.Float64() - 1) * u.cfg.Jitter
		}
		u.mu.Unlock()
		keep, byServer := !req.Close, false
		if u.cfg.KeepaliveRequests > 0 && n >= u.cfg.KeepaliveRequests {
			keep, byServer = false, true
		}
		work := u.cfg.ServerTime + time.Duration(jit*float64(u.cfg.ServerTime))
		if n == 1 {
			work += u.cfg.ConnTime
		}
		out = u.response(out[:0], id, n, keep, req.ProtoAtLeast(1, 1))
		end := u.work.start(arrived, work)
		dc, _ := raw.(*netem.Conn)
		if dc != nil {
			// The response is written (and encrypted) during the work, as
			// made when the work ends; it leaves then.
			dc.Cork(end)
			_, err = conn.Write(out)
			dc.Uncork()
			u.work.finish(end)
		} else {
			u.work.finish(end)
			_, err = conn.Write(out)
		}
		if err != nil {
			return
		}
		if keep {
			continue
		}
		if byServer || u.cfg.Closer == sim.SideServer {
			if byServer {
				u.closeEvent(raw, sim.ReasonKeepaliveRequests)
			}
			return
		}
		// The client closes first: wait for its FIN, then close.
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		io.Copy(io.Discard, conn)
		return
	}
}

// response builds one response whose size on the wire, headers included,
// is ResponseBytes (or just the headers, if they are larger).
func (u *Upstream) response(b []byte, id, n int, keep, http11 bool) []byte {
	var h strings.Builder
	h.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nX-Connlab-Conn: ")
	h.WriteString(strconv.Itoa(id))
	h.WriteByte('/')
	h.WriteString(strconv.Itoa(n))
	h.WriteString("\r\n")
	if !keep {
		h.WriteString("Connection: close\r\n")
	} else if !http11 {
		h.WriteString("Connection: keep-alive\r\n")
	}
	h.WriteString("Content-Length: ")
	base := h.Len() + len("\r\n\r\n")
	body := max(0, u.cfg.ResponseBytes-base)
	// The length's own digits count too.
	for body > 0 && base+len(strconv.Itoa(body))+body > u.cfg.ResponseBytes {
		body--
	}
	h.WriteString(strconv.Itoa(body))
	h.WriteString("\r\n\r\n")
	b = append(b, h.String()...)
	for i := 0; i < body; i++ {
		b = append(b, 'x')
	}
	return b
}

// String describes the upstream for the output.
func (u *Upstream) String() string {
	if u.cfg.TLS == sim.TLSNone {
		return fmt.Sprintf("Go HTTP/1.1 upstream on %s", u.Addr())
	}
	t := "no session tickets"
	if u.cfg.Tickets {
		t = "session tickets"
	}
	return fmt.Sprintf("Go crypto/tls TLS %s upstream (%s, %s) on %s", u.cfg.TLS, u.cfg.Cert, t, u.Addr())
}

// workQueue is the server's work: a request takes its work time on one of
// limit slots (0: as many as needed), first come, first served. A slot's
// next request starts when the previous one ends in exact time, not when
// its goroutine gets to run, so a busy machine does not slow the server's
// throughput down below what the model says. First come is by arrival
// time, not by the order the goroutines get to run: when many requests
// fall due together, Go's scheduler often wakes the last first.
type workQueue struct {
	limit   int
	mu      sync.Mutex
	cond    *sync.Cond
	free    []time.Time // when each slot is free
	busy    int
	waiting []time.Time // arrival times of the requests waiting for a slot
}

func newWorkQueue(limit int) *workQueue {
	q := &workQueue{limit: limit, free: make([]time.Time, limit)}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// start takes the next slot for a request that arrived at arrived and
// returns when its work ends; finish waits until then and frees the slot.
func (q *workQueue) start(arrived time.Time, work time.Duration) (end time.Time) {
	if q.limit == 0 {
		return arrived.Add(work)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting = append(q.waiting, arrived)
	for q.busy >= q.limit || !q.earliest(arrived) {
		q.cond.Wait()
	}
	i := slices.Index(q.waiting, arrived)
	q.waiting = slices.Delete(q.waiting, i, i+1)
	q.busy++
	slot := 0
	for i := range q.free {
		if q.free[i].Before(q.free[slot]) {
			slot = i
		}
	}
	start := arrived
	if q.free[slot].After(start) {
		start = q.free[slot]
	}
	end = start.Add(work)
	q.free[slot] = end
	q.cond.Broadcast()
	return end
}

// earliest reports whether no waiting request arrived before arrived.
func (q *workQueue) earliest(arrived time.Time) bool {
	for _, t := range q.waiting {
		if t.Before(arrived) {
			return false
		}
	}
	return true
}

func (q *workQueue) finish(end time.Time) {
	netem.SleepUntil(end)
	if q.limit == 0 {
		return
	}
	q.mu.Lock()
	q.busy--
	q.cond.Broadcast()
	q.mu.Unlock()
}
