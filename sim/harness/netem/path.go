// Package netem is the emulated network of a real run: round trips added
// in user space to real loopback sockets from the kernel's receive
// timestamps, the sender's slow start, precise waits, and the loopback-only
// dialer and listener every part of the harness uses.
package netem

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// minRTO is Linux's TCP_RTO_MIN: a connection idle longer than RTT + minRTO
// restarts slow start (tcp_slow_start_after_idle), as the model has it.
const minRTO = 200 * time.Millisecond

// A Path is the network between a client and a server as the harness
// emulates it in user space: the kernel may have no netem, and loopback has
// no delay of its own. It is applied to one end of a real TCP connection (see
// Conn), so TLS, HTTP and Redis round trips come out of the real
// protocols.
//
// Each direction's delay is best applied where the bytes arrive (In), from
// the kernel's receive timestamp: the receiving goroutine waits for the
// bytes to fall due with a precise wait, so it is awake when they do, and
// the wake-up of a process that sat idle while the bytes crossed the path
// (on a small VM as large as the effects the labs measure) is not added to
// the network's time. When the
// other end is not the harness's (nginx, curl through sim upstream,
// redis-server), both directions are delayed at the harness's end (Out for
// what it sends), and that end's peer pays its own wake-up.
type Path struct {
	// In is the one-way delay added to the bytes arriving at this end,
	// counted from the kernel's receive time, in order.
	In time.Duration
	// Out is the one-way delay added to the bytes this end sends, counted
	// from the application's write.
	Out time.Duration
	// FirstExtra is added to the first bytes that arrive: the round trip
	// of the TCP handshake, charged on the first bytes when the harness
	// does not own the client's dialer (sim upstream with curl, say).
	FirstExtra time.Duration
	// SlowStart, when set, emulates the sender's congestion window on the
	// outbound direction: loopback never limits the kernel's own window,
	// so without it a response larger than the initial window would take
	// one round trip where a real network takes several.
	SlowStart *SlowStart
}

func (p Path) zero() bool { return p.In == 0 && p.Out == 0 && p.FirstExtra == 0 && p.SlowStart == nil }

// SlowStart are the parameters of the emulated sender (RFC 5681 slow start,
// no loss, window growing by one segment per acknowledged segment, as
// Linux does until ssthresh, which is unbounded on a fresh connection).
type SlowStart struct {
	MSS       int
	InitCwnd  int           // segments
	RTT       time.Duration // when a segment's acknowledgement comes back
	AfterIdle bool          // tcp_slow_start_after_idle
}

// Wrap returns conn with the path applied at this end, or conn itself when
// the path adds nothing.
func (p Path) Wrap(conn net.Conn) net.Conn {
	if p.zero() {
		return conn
	}
	c := &Conn{raw: conn, p: p, wake: make(chan struct{}, 1), owake: make(chan struct{}, 1), done: make(chan struct{}),
		direct: p.Out == 0 && p.SlowStart == nil}
	if p.SlowStart != nil {
		c.cc = &ccState{p: *p.SlowStart, cwnd: p.SlowStart.InitCwnd}
	}
	c.loops.Add(1)
	go c.readLoop()
	if !c.direct {
		c.loops.Add(1)
		go c.writeLoop()
	}
	go func() { c.loops.Wait(); close(c.done) }()
	return c
}

// A Conn is one end of a real TCP connection seen through an emulated
// path. A goroutine reads the socket as soon as bytes arrive and stamps
// them with the kernel's receive time; Read hands them to the application
// the inbound delay later, in order. Writes go straight to the socket when
// nothing delays or paces them (direct); otherwise Write queues the bytes
// and returns, and a second goroutine puts them on the socket when they are
// due (after the emulated window lets them go, when slow start is
// emulated), everything due at once in one write. Close is queued the same
// way, so the FIN leaves when it would have arrived. If the application
// closes with bytes it never read (a request that arrived as the keep-alive
// timer fired), the socket is reset, as the kernel does with unread data.
type Conn struct {
	raw    net.Conn
	p      Path
	cc     *ccState
	direct bool
	loops  sync.WaitGroup
	done   chan struct{}

	mu      sync.Mutex
	in      []chunk   // received, not yet read by the application
	lastDue time.Time // inbound due times never go backwards
	inErr   error     // the read loop's end (io.EOF, a reset), due at inErrAt
	inErrAt time.Time
	gotAny  bool
	rdl     time.Time
	wake    chan struct{} // inbound data, an end, a deadline change or Close
	closed  bool          // the application closed
	readDue time.Time     // when the bytes Read returned last were due
	writeAt time.Time     // see Cork
	corked  bool

	out     []chunk // queued writes; a nil data with close set is the close
	owake   chan struct{}
	werr    error
	wmu     sync.Mutex // direct writes
	outLast time.Time  // due time of the last segment scheduled to leave
}

type chunk struct {
	data  []byte
	at    time.Time // when the application wrote it (outbound) or it is due (inbound)
	close bool
}

var (
	errDeadline = os.ErrDeadlineExceeded
	errEOF      = io.EOF
)

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// tcpConn finds the TCP connection under conn's wrappers, if any.
func tcpConn(conn net.Conn) *net.TCPConn {
	for {
		if tc, ok := conn.(*net.TCPConn); ok {
			return tc
		}
		u, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		conn = u.NetConn()
	}
}

func (c *Conn) readLoop() {
	defer c.loops.Done()
	buf := make([]byte, 16<<10)
	sr := newStampedReader(c.raw)
	for {
		var n int
		var err error
		var now, readAt time.Time
		if sr != nil {
			n, now, readAt, err = sr.read(buf)
		} else {
			n, err = c.raw.Read(buf)
			now = time.Now()
		}
		c.mu.Lock()
		due := now.Add(c.p.In)
		if !c.gotAny && n > 0 {
			due = due.Add(c.p.FirstExtra)
			c.gotAny = true
		}
		if n > 0 && !readAt.IsZero() {
			noteLag(readAt.Sub(due))
		}
		if due.Before(c.lastDue) {
			due = c.lastDue
		}
		c.lastDue = due
		if n > 0 {
			c.in = append(c.in, chunk{data: append([]byte(nil), buf[:n]...), at: due})
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				err = io.EOF
			}
			c.inErr, c.inErrAt = err, due
		}
		c.mu.Unlock()
		signal(c.wake)
		if err != nil {
			return
		}
	}
}

// Read returns bytes once their inbound delay has passed. A Read that
// waited for them and returns them after their due time was woken late:
// that is the harness's lag (noteLag), as a read of bytes already due is.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	waited := false
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return 0, net.ErrClosed
		}
		now := time.Now()
		var wait time.Time
		switch {
		case len(c.in) > 0:
			h := &c.in[0]
			if !h.at.After(now) {
				c.readDue = h.at
				if waited {
					noteLag(now.Sub(h.at))
				}
				n := 0
				// Everything already due goes up at once, as from a socket.
				for len(c.in) > 0 && n < len(p) && !c.in[0].at.After(now) {
					h := &c.in[0]
					m := copy(p[n:], h.data)
					n += m
					h.data = h.data[m:]
					if len(h.data) == 0 {
						c.in[0] = chunk{}
						c.in = c.in[1:]
					}
				}
				c.mu.Unlock()
				return n, nil
			}
			wait = h.at
		case c.inErr != nil:
			if !c.inErrAt.After(now) {
				err := c.inErr
				c.mu.Unlock()
				return 0, err
			}
			wait = c.inErrAt
		}
		dl := c.rdl
		c.mu.Unlock()
		if !dl.IsZero() && !dl.After(now) {
			return 0, errDeadline
		}
		// The next instant something happens by itself: the head falls due
		// (nothing that arrives later can be due earlier) or the deadline.
		target := wait
		if !dl.IsZero() && (target.IsZero() || dl.Before(target)) {
			target = dl
		}
		waited = true
		if target.IsZero() {
			<-c.wake
			continue
		}
		if time.Until(target) <= coarseMargin {
			preciseWait(target)
			continue
		}
		t := time.NewTimer(time.Until(target) - coarseMargin)
		select {
		case <-c.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// Arrived returns when the bytes Read returned last arrived (were due).
func (c *Conn) Arrived() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readDue
}

// Write puts p on the socket (direct), or queues it and returns at once,
// as a write into a socket buffer does.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, net.ErrClosed
	}
	if c.werr != nil {
		err := c.werr
		c.mu.Unlock()
		return 0, err
	}
	if c.direct {
		c.mu.Unlock()
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.raw.Write(p)
	}
	defer c.mu.Unlock()
	at := time.Now()
	if c.corked {
		at = c.writeAt
	}
	c.out = append(c.out, chunk{data: append([]byte(nil), p...), at: at})
	if !c.corked {
		signal(c.owake)
	}
	return len(p), nil
}

// Cork makes the writes that follow count as made at t, and holds them
// until Uncork, which hands them to the write loop together. The upstream
// writes a response, TLS record by record, while its work is still going
// on, as made at the end of the work: the write loop then has time to wake
// up and sends the whole response when the work ends, in one write.
func (c *Conn) Cork(t time.Time) {
	c.mu.Lock()
	c.writeAt, c.corked = t, true
	c.mu.Unlock()
}

// Uncork sends the writes held since Cork.
func (c *Conn) Uncork() {
	c.mu.Lock()
	c.writeAt, c.corked = time.Time{}, false
	c.mu.Unlock()
	signal(c.owake)
}

// Close queues the close behind the queued writes and returns (direct:
// closes the socket now).
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closed = true
	unread := len(c.in) > 0
	if !c.direct {
		c.out = append(c.out, chunk{at: time.Now(), close: true})
	}
	c.mu.Unlock()
	signal(c.owake)
	signal(c.wake)
	if c.direct {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.closeRaw(unread)
	}
	return nil
}

// closeRaw closes the socket, with a reset if the application left bytes
// unread (the kernel resets a connection closed with unread data).
// Otherwise the FIN leaves at once, as close(2) sends it in curl or nginx:
// Go's Close sends it only once the read loop's goroutine has let go of the
// socket, and on a busy machine that came after the server had answered the
// close_notify just before it by closing first (its TIME_WAIT instead of
// the client's).
func (c *Conn) closeRaw(unread bool) error {
	if tc := tcpConn(c.raw); tc != nil {
		if unread {
			tc.SetLinger(0)
		} else {
			tc.CloseWrite()
		}
	}
	return c.raw.Close()
}

// Abort closes the socket now (harness shutdown).
func (c *Conn) Abort() {
	c.Close()
	c.raw.Close()
}

// Done is closed when the connection's goroutines have ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// seg is a piece of queued output with the time it leaves.
type seg struct {
	data  []byte
	due   time.Time
	close bool
}

// schedule cuts queued writes into segments and times them: the emulated
// window releases each segment (when slow start is emulated), the outbound
// delay is added, and due times never go backwards.
func (c *Conn) schedule(segs []seg, items []chunk) []seg {
	next := func(t time.Time) time.Time {
		if t.Before(c.outLast) {
			t = c.outLast
		}
		c.outLast = t
		return t
	}
	for _, it := range items {
		if it.close {
			segs = append(segs, seg{due: next(it.at.Add(c.p.Out)), close: true})
			continue
		}
		for data := it.data; len(data) > 0; {
			n, r := len(data), it.at
			if c.cc != nil {
				n = min(n, c.cc.p.MSS)
				r = c.cc.release(it.at)
			}
			segs = append(segs, seg{data: data[:n], due: next(r.Add(c.p.Out))})
			data = data[n:]
		}
	}
	return segs
}

func (c *Conn) takeOut() []chunk {
	c.mu.Lock()
	defer c.mu.Unlock()
	items := c.out
	c.out = nil
	return items
}

func (c *Conn) writeLoop() {
	defer c.loops.Done()
	var segs []seg
	var batch []byte
	for {
		c.mu.Lock()
		for len(c.out) == 0 && len(segs) == 0 {
			c.mu.Unlock()
			<-c.owake
			c.mu.Lock()
		}
		c.mu.Unlock()
		segs = c.schedule(segs, c.takeOut())
		SleepUntil(segs[0].due)
		// What was queued meanwhile is due no earlier; whatever is due now
		// leaves in one write, as a burst of segments does.
		segs = c.schedule(segs, c.takeOut())
		now := time.Now()
		batch = batch[:0]
		i := 0
		for ; i < len(segs) && !segs[i].close && !segs[i].due.After(now); i++ {
			batch = append(batch, segs[i].data...)
		}
		if len(batch) > 0 {
			noteWriteLag(now.Sub(segs[0].due))
			if _, err := c.raw.Write(batch); err != nil {
				c.mu.Lock()
				if c.werr == nil {
					c.werr = err
				}
				c.mu.Unlock()
			}
		}
		if i < len(segs) && segs[i].close && !segs[i].due.After(now) {
			c.mu.Lock()
			unread := len(c.in) > 0
			c.mu.Unlock()
			c.closeRaw(unread)
			return
		}
		n := copy(segs, segs[i:])
		clear(segs[n:])
		segs = segs[:n]
	}
}

func (c *Conn) LocalAddr() net.Addr  { return c.raw.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// SetDeadline sets the read deadline; writes never block.
func (c *Conn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl = t
	c.mu.Unlock()
	signal(c.wake)
	return nil
}

func (c *Conn) SetWriteDeadline(time.Time) error { return nil }

// ccState is the emulated sender's congestion window.
type ccState struct {
	p        SlowStart
	cwnd     int
	inflight int
	acks     []time.Time // acknowledgement times of segments in flight, in order
	last     time.Time   // release time of the last segment
}

const maxCwnd = 1 << 20

func (s *ccState) ackUntil(t time.Time) {
	for len(s.acks) > 0 && !s.acks[0].After(t) {
		s.acks = s.acks[1:]
		s.inflight--
		s.cwnd = min(s.cwnd+1, maxCwnd)
	}
}

// next computes when the next segment, written by the application at at,
// leaves the sender, and updates the window if commit.
func (s *ccState) next(at time.Time, commit bool) time.Time {
	r := at
	if r.Before(s.last) {
		r = s.last
	}
	cwnd, inflight, acks := s.cwnd, s.inflight, s.acks
	s.ackUntil(r)
	if rto := s.p.RTT + minRTO; s.inflight == 0 && s.p.AfterIdle && !s.last.IsZero() && r.Sub(s.last) > rto {
		// tcp_cwnd_restart: halve once per timeout idle, down to the
		// initial window.
		restart := min(s.p.InitCwnd, s.cwnd)
		for d := r.Sub(s.last) - rto; d > 0 && s.cwnd > restart; d -= rto {
			s.cwnd >>= 1
		}
		s.cwnd = max(s.cwnd, restart)
	}
	for s.inflight >= s.cwnd {
		r = s.acks[0]
		s.ackUntil(r)
	}
	if !commit {
		s.cwnd, s.inflight, s.acks = cwnd, inflight, acks
		return r
	}
	s.inflight++
	s.acks = append(s.acks, r.Add(s.p.RTT))
	s.last = r
	return r
}

func (s *ccState) release(at time.Time) time.Time { return s.next(at, true) }
func (s *ccState) peek(at time.Time) time.Time    { return s.next(at, false) }
