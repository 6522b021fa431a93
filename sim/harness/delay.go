package harness

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

// A path is the network between a client and a server as the harness
// emulates it in user space: this kernel has no netem, and loopback has no
// delay of its own. It is applied at one end of a real TCP connection (see
// delayConn), so TLS, HTTP and Redis round trips come out of the real
// protocols.
type path struct {
	// Half is the one-way delay, RTT/2, added to every byte in each
	// direction, in order.
	Half time.Duration
	// FirstExtra is added to the first bytes that arrive: the round trip
	// of the TCP handshake, charged on the first bytes when the harness
	// does not own the client's dialer (sim upstream with curl, say).
	FirstExtra time.Duration
	// SlowStart, when set, emulates the sender's congestion window on the
	// outbound direction: loopback never limits the kernel's own window,
	// so without it a response larger than the initial window would take
	// one round trip where a real network takes several.
	SlowStart *slowStart
}

func (p path) zero() bool { return p.Half == 0 && p.FirstExtra == 0 && p.SlowStart == nil }

// slowStart are the parameters of the emulated sender (RFC 5681 slow start,
// no loss, window growing by one segment per acknowledged segment, as
// Linux does until ssthresh, which is unbounded on a fresh connection).
type slowStart struct {
	MSS       int
	InitCwnd  int           // segments
	RTT       time.Duration // when a segment's acknowledgement comes back
	AfterIdle bool          // tcp_slow_start_after_idle
}

// wrap returns conn with the path applied at this end, or conn itself when
// the path adds nothing.
func (p path) wrap(conn net.Conn) net.Conn {
	if p.zero() {
		return conn
	}
	c := &delayConn{raw: conn, p: p, wake: make(chan struct{}, 1), owake: make(chan struct{}, 1), done: make(chan struct{})}
	if p.SlowStart != nil {
		c.cc = &ccState{p: *p.SlowStart, cwnd: p.SlowStart.InitCwnd}
	}
	c.loops.Add(2)
	go c.readLoop()
	go c.writeLoop()
	go func() { c.loops.Wait(); close(c.done) }()
	return c
}

// A delayConn is one end of a real TCP connection seen through an emulated
// path. A goroutine reads the socket as soon as bytes arrive and stamps
// them; Read hands them to the application one-way delay later, in order.
// Write queues the bytes and returns; a second goroutine puts them on the
// socket when they are due (after the emulated window lets them go, when
// slow start is emulated). Close is queued the same way, so the FIN leaves
// when it would have arrived. If the application closes with bytes it never
// read (a request that arrived as the keep-alive timer fired), the socket is
// reset, as the kernel does with unread data.
type delayConn struct {
	raw   net.Conn
	p     path
	cc    *ccState
	loops sync.WaitGroup
	done  chan struct{}

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
	writeAt time.Time     // see backdate

	out     []chunk // queued writes; a nil data with close set is the close
	owake   chan struct{}
	werr    error
	outLast time.Time // due time of the last byte put on the socket
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

func (c *delayConn) readLoop() {
	defer c.loops.Done()
	buf := make([]byte, 16<<10)
	sr := newStampedReader(c.raw)
	for {
		var n int
		var err error
		var now time.Time
		if sr != nil {
			n, now, err = sr.read(buf)
		} else {
			n, err = c.raw.Read(buf)
			now = time.Now()
		}
		c.mu.Lock()
		due := now.Add(c.p.Half)
		if !c.gotAny && n > 0 {
			due = due.Add(c.p.FirstExtra)
			c.gotAny = true
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

// Read returns bytes once their one-way delay has passed.
func (c *delayConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
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
				n := copy(p, h.data)
				h.data = h.data[n:]
				if len(h.data) == 0 {
					c.in[0] = chunk{}
					c.in = c.in[1:]
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

// arrived returns when the bytes Read returned last arrived (were due).
func (c *delayConn) arrived() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readDue
}

// Write queues p and returns at once, as a write into a socket buffer does.
func (c *delayConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	if c.werr != nil {
		return 0, c.werr
	}
	at := time.Now()
	if !c.writeAt.IsZero() && c.writeAt.Before(at) {
		at = c.writeAt
	}
	c.out = append(c.out, chunk{data: append([]byte(nil), p...), at: at})
	signal(c.owake)
	return len(p), nil
}

// backdate makes the writes that follow count as made at t (zero: now).
// The upstream sets it to the end of a request's work: writing the
// response after waking is part of the server's time, not added to it.
func (c *delayConn) backdate(t time.Time) {
	c.mu.Lock()
	c.writeAt = t
	c.mu.Unlock()
}

// Close queues the close behind the queued writes and returns.
func (c *delayConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closed = true
	c.out = append(c.out, chunk{at: time.Now(), close: true})
	c.mu.Unlock()
	signal(c.owake)
	signal(c.wake)
	return nil
}

// abort closes the socket now (harness shutdown).
func (c *delayConn) abort() {
	c.Close()
	c.raw.Close()
}

func (c *delayConn) writeLoop() {
	defer c.loops.Done()
	var batch []byte
	for {
		c.mu.Lock()
		for len(c.out) == 0 {
			c.mu.Unlock()
			<-c.owake
			c.mu.Lock()
		}
		item := c.out[0]
		c.out[0] = chunk{}
		c.out = c.out[1:]
		c.mu.Unlock()
		if item.close {
			due := item.at.Add(c.p.Half)
			if due.Before(c.outLast) {
				due = c.outLast
			}
			SleepUntil(due)
			c.mu.Lock()
			unread := len(c.in) > 0
			c.mu.Unlock()
			if tc, ok := c.raw.(*net.TCPConn); ok && unread {
				tc.SetLinger(0) // the kernel resets a connection closed with unread data
			}
			c.raw.Close()
			return
		}
		// Cut the write into segments; send each group due at once in one write.
		data := item.data
		for len(data) > 0 {
			n := len(data)
			due := item.at
			if c.cc != nil {
				n = min(n, c.cc.p.MSS)
				due = c.cc.release(item.at)
			}
			due = due.Add(c.p.Half)
			if due.Before(c.outLast) {
				due = c.outLast
			}
			batch = append(batch[:0], data[:n]...)
			data = data[n:]
			for c.cc != nil && len(data) > 0 {
				// Further segments released at the same time join the write.
				r := c.cc.peek(item.at)
				if !r.Add(c.p.Half).Equal(due) {
					break
				}
				c.cc.release(item.at)
				m := min(len(data), c.cc.p.MSS)
				batch = append(batch, data[:m]...)
				data = data[m:]
			}
			SleepUntil(due)
			c.outLast = due
			if _, err := c.raw.Write(batch); err != nil {
				c.mu.Lock()
				if c.werr == nil {
					c.werr = err
				}
				c.mu.Unlock()
				data = nil
			}
		}
	}
}

func (c *delayConn) LocalAddr() net.Addr  { return c.raw.LocalAddr() }
func (c *delayConn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// SetDeadline sets the read deadline; writes never block.
func (c *delayConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *delayConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl = t
	c.mu.Unlock()
	signal(c.wake)
	return nil
}

func (c *delayConn) SetWriteDeadline(time.Time) error { return nil }

// ccState is the emulated sender's congestion window.
type ccState struct {
	p        slowStart
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
