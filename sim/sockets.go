package sim

import "time"

// TimeWaitLen is how long a socket stays in TIME_WAIT on Linux: the
// kernel's fixed TCP_TIMEWAIT_LEN (include/net/tcp.h), not a sysctl. RFC 9293
// asks for 2×MSL = 4 minutes; Linux uses 60 s.
const TimeWaitLen = 60 * time.Second

// TWReuseDelay is how long a socket must have been in TIME_WAIT before
// tcp_tw_reuse lets connect() take its port: tcp_tw_reuse_delay, 1000 ms by
// default (tcp_twsk_unique in net/ipv4/tcp_ipv4.c).
const TWReuseDelay = time.Second

type side uint8

const (
	sideClient side = iota
	sideServer
)

// String is the side's name in events (Side).
func (s side) String() string { return string(s.word()) }

// word is the side as events name it.
func (s side) word() Side {
	if s == sideServer {
		return SideServer
	}
	return SideClient
}

type twEntry struct {
	at   time.Duration // entered TIME_WAIT
	port int32         // client side only
	seq  uint32        // client side: its number in the port search (ports.enterTimeWait)
}

// sockets counts what the timeline and the summary show: open sockets and
// each side's TIME_WAIT sockets. A side's TIME_WAIT queue is in order of
// entry; on the client's, connect() may take a socket over before it
// expires (allocPort), which leaves its entry behind, no longer matching its
// port's number, to be dropped when it comes to the front.
type sockets struct {
	open, openPeak int
	tw             [2]ring[twEntry]
	twN            [2]int // sockets in TIME_WAIT now
	twPeak         [2]int
	twTimer        [2]bool // an expiry event is queued for the side's oldest entry
}

// allocPort finds a local port for connect(), or reports EADDRNOTAVAIL.
func (m *model) allocPort() (int, bool) {
	port, tookOver, ok := m.ports.connect(m.now)
	if tookOver {
		m.twN[sideClient]--
		// Always emitted: the summary counts it (time_wait_reused).
		m.ev = Event{Kind: KindTimeWaitEnd, At: m.now, LocalPort: port, By: SideClient, Reason: ReasonReused}
		m.emit(&m.ev)
	}
	return port, ok
}

func (m *model) enterTimeWait(s side, at time.Duration, port int) {
	tw := &m.tw[s]
	e := twEntry{at: at, port: int32(port)}
	if s == sideClient {
		e.seq = m.ports.enterTimeWait(port, at)
	}
	tw.push(e)
	m.twN[s]++
	m.twPeak[s] = max(m.twPeak[s], m.twN[s])
	if !m.twTimer[s] {
		m.twTimer[s] = true
		m.schedule(tw.peek().at+TimeWaitLen, evTimeWaitEnd, 0, int32(s))
	}
	if m.socketEvents() {
		m.ev = Event{Kind: KindTimeWait, At: at, LocalPort: port, By: s.word()}
		m.emit(&m.ev)
	}
}

// timeWaitEnd expires the TIME_WAIT sockets of side s that are due, drops
// the entries of sockets connect() took over, and queues one event for the
// next oldest: the queue is in order of entry, so one timer per side is
// enough.
func (m *model) timeWaitEnd(_ int32, s int32) {
	tw := &m.tw[s]
	for tw.len() > 0 {
		e := tw.peek()
		live := side(s) == sideServer || m.ports.holdsTimeWait(int(e.port), e.seq)
		if live && e.at+TimeWaitLen > m.now {
			break
		}
		tw.pop()
		if !live {
			continue // taken over by connect()
		}
		m.twN[s]--
		if side(s) == sideClient {
			m.ports.leaveTimeWait(int(e.port), e.seq)
		}
		if m.socketEvents() {
			m.ev = Event{Kind: KindTimeWaitEnd, At: m.now, LocalPort: int(e.port), By: side(s).word()}
			m.emit(&m.ev)
		}
	}
	m.twTimer[s] = tw.len() > 0
	if m.twTimer[s] {
		m.schedule(tw.peek().at+TimeWaitLen, evTimeWaitEnd, 0, s)
	}
}

// serverClose records the server closing connection ci first at time at:
// the server holds the TIME_WAIT, the client's socket waits to be closed.
func (m *model) serverClose(ci int32, at time.Duration, reason CloseReason) {
	c := &m.conns[ci]
	c.srvClosed, c.srvClosedAt = true, at
	c.gen++
	if m.socketEvents() {
		m.ev = Event{Kind: KindClose, At: at, Conn: c.id, LocalPort: c.port, By: SideServer, Reason: reason}
		m.emit(&m.ev)
	}
}

// closeConn ends connection ci. If the client closes first it holds the
// TIME_WAIT and its port; if the server closed first (or closes now), the
// server holds it, from when the client's FIN answers, and the client's
// port is free at once. A request that reaches a server that has closed
// (ReasonReset) is answered with a reset, which ends the server's socket
// without a TIME_WAIT.
func (m *model) closeConn(ci int32, first side, reason CloseReason) {
	c := &m.conns[ci]
	if first == sideServer {
		if !c.srvClosed {
			m.serverClose(ci, m.now, reason)
		}
		if reason != ReasonReset {
			m.enterTimeWait(sideServer, m.now, 0)
		}
	}
	c.state = connClosed
	c.gen++
	m.open--
	if first == sideClient {
		if m.socketEvents() {
			m.ev = Event{Kind: KindClose, At: m.now, Conn: c.id, LocalPort: c.port, By: SideClient, Reason: reason}
			m.emit(&m.ev)
		}
		m.enterTimeWait(sideClient, m.now, c.port)
	} else {
		m.ports.free(c.port)
	}
	ow := &m.owners[c.owner]
	ow.open--
	m.freeConns = append(m.freeConns, ci)
	if ow.waiters.len() > 0 && ow.alive {
		// A call waiting for the pool may open a connection now.
		ri := ow.waiters.pop()
		m.reqs[ri].queued = m.now - m.reqs[ri].waitFrom
		m.openConn(ri, c.owner, m.now)
		return
	}
	if !ow.alive && ow.open == 0 && len(ow.idle) == 0 {
		m.freeOwners = append(m.freeOwners, c.owner)
	}
}

// newConn takes a connection slot for owner o with a local port.
func (m *model) newConn(o int32, port int, at time.Duration) int32 {
	var ci int32
	if n := len(m.freeConns); n > 0 {
		ci = m.freeConns[n-1]
		m.freeConns = m.freeConns[:n-1]
	} else {
		m.conns = append(m.conns, conn{})
		ci = int32(len(m.conns) - 1)
	}
	m.connIDs++
	gen := m.conns[ci].gen + 1
	m.conns[ci] = conn{id: m.connIDs, gen: gen, owner: o, state: connActive, port: port, created: at, cwnd: m.s.InitCwnd}
	m.owners[o].open++
	m.open++
	m.openPeak = max(m.openPeak, m.open)
	return ci
}
