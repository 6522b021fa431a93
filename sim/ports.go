package sim

import "time"

// TimeWaitLen is how long a socket stays in TIME_WAIT on Linux: the
// kernel's fixed TCP_TIMEWAIT_LEN (include/net/tcp.h), not a sysctl. RFC 9293
// asks for 2×MSL = 4 minutes; Linux uses 60 s.
const TimeWaitLen = 60 * time.Second

// TWReuseDelay is how old a TIME_WAIT socket's last timestamp must be before
// tcp_tw_reuse lets connect() take its port (net/ipv4/tcp_ipv4.c).
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

// ports is the client's ephemeral port space towards the one destination of
// a scenario: a port is free, held by an open socket, or held by a socket in
// TIME_WAIT. Linux's connect() (__inet_hash_connect) tries the even ports,
// then the odd ones, and takes the first that is free or, with tcp_tw_reuse,
// held by a TIME_WAIT socket more than a second old; EADDRNOTAVAIL when none
// is. Where it starts is chance: a hash that changes every 10 s
// (secure_ipv4_port_ephemeral) plus a counter that moves on by 1 to 8 ports
// of a parity after each connect (more when it skipped busy ones), so with
// tcp_tw_reuse it takes over a TIME_WAIT port wherever it lands on one, free
// ports or not. The model takes free even ports first, oldest-freed first,
// a TIME_WAIT port more than a second old only when none is left, then odd
// ports. Its EADDRNOTAVAIL and connects are the kernel's; in a run shorter
// than TIME_WAIT its TIME_WAIT count is the most the kernel can hold, and
// time_wait_reused the fewest ports it takes over.
type ports struct {
	free [2]ring[int32] // free even and odd ports
}

type twEntry struct {
	at   time.Duration // entered TIME_WAIT
	port int32         // client side only
}

// sockets counts what the timeline and the summary show.
type sockets struct {
	open, openPeak int
	tw             [2]ring[twEntry]
	twPeak         [2]int
	twTimer        [2]bool // an expiry event is queued for the side's oldest entry
}

func (m *model) initPorts() {
	for p := m.s.PortRange.Lo; p <= m.s.PortRange.Hi; p++ {
		m.freePort(int32(p))
	}
}

func (m *model) freePort(p int32) { m.free[p&1].push(p) }

// allocPort finds a local port for connect(), or reports EADDRNOTAVAIL.
func (m *model) allocPort() (int, bool) {
	if m.free[0].len() > 0 {
		return int(m.free[0].pop()), true
	}
	tw := &m.tw[sideClient]
	if m.twReuse && tw.len() > 0 && m.now-tw.peek().at >= TWReuseDelay {
		e := tw.pop()
		// Always emitted: the summary counts it (time_wait_reused).
		m.ev = Event{Kind: KindTimeWaitEnd, At: m.now, LocalPort: int(e.port), By: SideClient, Reason: ReasonReused}
		m.emit(&m.ev)
		return int(e.port), true
	}
	if m.free[1].len() > 0 {
		return int(m.free[1].pop()), true
	}
	return 0, false
}

func (m *model) enterTimeWait(s side, at time.Duration, port int) {
	tw := &m.tw[s]
	tw.push(twEntry{at: at, port: int32(port)})
	m.twPeak[s] = max(m.twPeak[s], tw.len())
	if !m.twTimer[s] {
		m.twTimer[s] = true
		m.schedule(tw.peek().at+TimeWaitLen, evTimeWaitEnd, 0, int32(s))
	}
	if m.socketEvents() {
		m.ev = Event{Kind: KindTimeWait, At: at, LocalPort: port, By: s.word()}
		m.emit(&m.ev)
	}
}

// timeWaitEnd expires the TIME_WAIT sockets of side s that are due (entries
// already taken by tcp_tw_reuse are simply gone) and queues one event for
// the next oldest: the queue is in order of entry, so one timer per side
// is enough.
func (m *model) timeWaitEnd(_ int32, s int32) {
	tw := &m.tw[s]
	for tw.len() > 0 && tw.peek().at+TimeWaitLen <= m.now {
		e := tw.pop()
		if side(s) == sideClient {
			m.freePort(e.port)
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
		m.freePort(int32(c.port))
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
