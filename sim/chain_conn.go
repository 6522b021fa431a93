package sim

// A chain's connections: kept and taken from pools, closed on timers and
// by either side, and their ports and TIME_WAIT sockets.

import "time"

// release returns connection ci to its owner: to a waiting call, to the
// idle list (closing the least recently used beyond nginx's keepalive N),
// or closed when the owner keeps no more.
func (m *chainModel) release(ci int32) {
	c := &m.conns[ci]
	o := c.owner
	ow := &m.owners[o]
	h := int(c.hop)
	cs := m.callerScenario(h)
	if !ow.alive {
		m.closeConn(ci, sideClient, false, ReasonEndOfRequest)
		return
	}
	if ow.waiters.len() > 0 {
		wj := ow.waiters.pop()
		m.jobs[wj].callWait = m.now - m.jobs[wj].waitFrom
		m.hops[h].reused++
		m.sendRequest(wj, ci, m.now)
		return
	}
	pol := m.callerPolicy(h)
	if pol == polPool && cs.PoolMaxIdle > 0 && len(ow.idle) >= cs.PoolMaxIdle {
		m.closeConn(ci, sideClient, false, ReasonIdleFull)
		return
	}
	c.state = connIdle
	ow.idle = append(ow.idle, ci)
	hp := &m.hops[h]
	hp.idle++
	if m.sink != nil {
		m.ev = Event{Kind: KindIdle, At: m.now, Hop: m.hopTag(h), Conn: c.id, LocalPort: int(c.port)}
		m.sink(&m.ev)
	}
	if to := m.tiers[h].s.KeepaliveTimeout; to > 0 && c.timerAt == 0 {
		// One pending timer per connection; an older one moves itself.
		c.timerAt = c.srvIdleAt + to
		m.schedule(c.timerAt, ckIdle, ci, c.gen)
	}
	if pol == polUpstream && len(ow.idle) > cs.UpstreamKeepalive {
		lru := ow.idle[0]
		copy(ow.idle, ow.idle[1:])
		ow.idle = ow.idle[:len(ow.idle)-1]
		hp.idle--
		m.closeConn(lru, sideClient, false, ReasonEvict)
	}
	hp.idlePeak = max(hp.idlePeak, hp.idle)
}

// takeIdle pops owner o's most recently used idle connection that can
// carry a request over hop h now, closing those that cannot (findIdle);
// -1 when none is left. raced: the server is closing the one taken as the
// request goes out (the keep-alive race), which the client learns at seen,
// when the server's FIN arrives. dropped counts the connections it closed
// on the way, each of which costs the client drop_cpu.
func (m *chainModel) takeIdle(o int32, h int) (ci int32, raced bool, seen time.Duration, dropped int) {
	cs := m.callerScenario(h)
	half := m.tiers[h].half
	for {
		ow := &m.owners[o]
		n := len(ow.idle)
		if n == 0 {
			return -1, false, 0, dropped
		}
		ci = ow.idle[n-1]
		ow.idle = ow.idle[:n-1]
		m.hops[h].idle--
		c := &m.conns[ci]
		closeAt, closing := m.serverCloseTime(c)
		switch findIdle(idleConn{c.lastUsed, c.created, closeAt, closing}, m.now, half, cs.MaxIdleAge, cs.MaxLifetime) {
		case idleDead:
			m.closeConn(ci, sideServer, false, ReasonDead)
			dropped++
		case idleTooOld:
			m.closeConn(ci, sideClient, false, ReasonMaxIdleAge)
			dropped++
		case idleTooLong:
			m.closeConn(ci, sideClient, false, ReasonMaxLifetime)
			dropped++
		case idleRaced:
			if !c.srvClosed {
				m.serverClose(ci, closeAt)
			}
			// The request meets a closed socket: the server answers with
			// a reset, which ends its socket without a TIME_WAIT.
			m.closeConn(ci, sideServer, false, ReasonReset)
			return -1, true, closeAt + half, dropped
		default:
			c.state = connActive
			return ci, false, 0, dropped
		}
	}
}

// serverCloseTime is when the server closes c if nothing arrives: its
// keep-alive timer, unless it already closed.
func (m *chainModel) serverCloseTime(c *cconn) (time.Duration, bool) {
	if c.srvClosed {
		return c.srvClosedAt, true
	}
	if to := m.tiers[c.hop].s.KeepaliveTimeout; to > 0 {
		return c.srvIdleAt + to, true
	}
	return 0, false
}

// serverClose records the server closing idle connection ci on its timer
// at time at: the client learns it when the FIN arrives.
func (m *chainModel) serverClose(ci int32, at time.Duration) {
	c := &m.conns[ci]
	c.srvClosed, c.srvClosedAt = true, at
	c.gen = (c.gen + 1) & maxItemB // it rides in an item's b
	if m.sink != nil {
		m.ev = Event{Kind: KindClose, At: at, Hop: m.hopTag(int(c.hop)), Conn: c.id, LocalPort: int(c.port), By: SideServer, Reason: ReasonIdleTimeout}
		m.sink(&m.ev)
	}
}

// idleTimer fires when connection ci may have sat idle for the server's
// keep-alive timeout; if it was used since, it moves to the new deadline.
// At the deadline the server closes it; half a round trip later its FIN
// reaches the caller, which drops it there if it watches its idle
// connections (nginx, pools), else finds it dead when it next looks
// (takeIdle).
func (m *chainModel) idleTimer(ci, gen int32) {
	c := &m.conns[ci]
	if c.gen != gen {
		return
	}
	c.timerAt = 0
	if c.state != connIdle {
		return // busy: release sets the timer again
	}
	h := int(c.hop)
	pol := m.callerPolicy(h)
	watched := pol == polPool || pol == polUpstream
	if c.srvClosed {
		if !watched {
			return
		}
		ow := &m.owners[c.owner]
		for i, x := range ow.idle {
			if x == ci {
				ow.idle = append(ow.idle[:i], ow.idle[i+1:]...)
				m.hops[h].idle--
				break
			}
		}
		m.closeConn(ci, sideServer, false, ReasonDead)
		return
	}
	if deadline := c.srvIdleAt + m.tiers[h].s.KeepaliveTimeout; m.now < deadline {
		c.timerAt = deadline
		m.schedule(deadline, ckIdle, ci, gen)
		return
	}
	m.serverClose(ci, m.now)
	if watched {
		m.schedule(m.now+m.tiers[h].half, ckIdle, ci, c.gen) // when the FIN arrives
	}
}

// dropOwner closes owner o's idle connections (the client closes first);
// those in use are closed when their call ends.
func (m *chainModel) dropOwner(o int32, reason CloseReason) {
	ow := &m.owners[o]
	ow.alive = false
	for _, ci := range ow.idle {
		m.hops[m.conns[ci].hop].idle--
		m.closeConn(ci, sideClient, false, reason)
	}
	ow = &m.owners[o]
	ow.idle = ow.idle[:0]
	for ow.waiters.len() > 0 {
		m.acquire(ow.waiters.pop())
		ow = &m.owners[o]
	}
	if ow.open == 0 {
		m.freeOwners = append(m.freeOwners, o)
	}
}

func (m *chainModel) newConn(h int, o int32, port int32) int32 {
	ci := takeSlot(&m.conns, &m.freeConns)
	t := &m.tiers[h]
	// Connections go to the tier's workers in turn, to one at random, or
	// by the shares a real run measured.
	w := int32(t.rr)
	if t.rr++; t.rr == len(t.workers) {
		t.rr = 0
	}
	switch {
	case len(t.s.WorkerShares) > 0:
		w = pickShare(t.s.WorkerShares, m.rng.Float64())
	case t.s.Dispatch == DispatchRandom:
		w = int32(m.rng.IntN(len(t.workers)))
	}
	m.connIDs++
	c := &m.conns[ci]                       // field by field: a literal is built aside and copied
	*c = cconn{gen: (c.gen + 1) & maxItemB} // it rides in an item's b
	c.id, c.hop, c.state, c.owner = m.connIDs, int8(h), connActive, o
	c.worker, c.port, c.created, c.cwnd = w, port, m.now, t.s.InitCwnd
	m.owners[o].open++
	hp := &m.hops[h]
	hp.open++
	hp.openPeak = max(hp.openPeak, hp.open)
	hp.ports++
	hp.portsPeak = max(hp.portsPeak, hp.ports)
	m.open++
	m.openPeak = max(m.openPeak, m.open)
	return ci
}

// pickShare picks the worker whose share holds x, a draw in [0, 1): the
// shares are weights, so x is scaled by their sum. Workers beyond the
// list take none.
func pickShare(shares []float64, x float64) int32 {
	sum := 0.0
	for _, f := range shares {
		sum += f
	}
	x *= sum
	last := int32(0)
	for i, f := range shares {
		if f <= 0 {
			continue
		}
		last = int32(i)
		if x < f {
			return last
		}
		x -= f
	}
	return last // rounding at the top end
}

// allocPort finds a local port for a connection over hop h, by the
// kernel's search (tcpSockets.connect), which may take over a TIME_WAIT
// socket of either side on the port it lands on.
func (m *chainModel) allocPort(h int) (int32, bool) {
	hp := &m.hops[h]
	port, clientTW, serverTW, ok := hp.connect(m.now)
	if !ok {
		return 0, false
	}
	if clientTW {
		m.tw[sideClient]--
		hp.ports--
		if m.counted() {
			m.ev = Event{Kind: KindTimeWaitEnd, At: m.now, Hop: m.hopTag(h), LocalPort: int(port), By: SideClient, Reason: ReasonReused}
			m.emit()
		}
	}
	if serverTW {
		m.tw[sideServer]--
		if m.sink != nil {
			m.ev = Event{Kind: KindTimeWaitEnd, At: m.now, Hop: m.hopTag(h), LocalPort: int(port), By: SideServer, Reason: ReasonTakenOver}
			m.sink(&m.ev)
		}
	}
	return port, true
}

// closeConn ends connection ci: the side first closes first and holds the
// TIME_WAIT (the client's holds its port); with both, the FINs crossed and
// each side holds one.
func (m *chainModel) closeConn(ci int32, first side, both bool, reason CloseReason) {
	c := &m.conns[ci]
	h := int(c.hop)
	hp := &m.hops[h]
	c.state = connClosed
	c.gen = (c.gen + 1) & maxItemB // it rides in an item's b
	if both {
		hp.both++
	} else {
		hp.closedBy[first]++
	}
	// A connection the server closed on its timer had its close event
	// then (serverClose).
	if m.sink != nil && !(first == sideServer && c.srvClosed) {
		// A simultaneous close (both) is the connecting side's close event
		// with reason simultaneous; each side's TIME_WAIT has its own.
		m.ev = Event{Kind: KindClose, At: m.now, Hop: m.hopTag(h), Conn: c.id, LocalPort: int(c.port), By: first.word(), Reason: reason}
		m.sink(&m.ev)
	}
	// A reset ends the server's socket without a TIME_WAIT.
	if (first == sideServer || both) && reason != ReasonReset {
		m.enterTimeWait(h, sideServer, c.port)
	}
	if first == sideClient || both {
		m.enterTimeWait(h, sideClient, c.port)
	} else {
		hp.search.free(int(c.port))
		hp.ports--
	}
	hp.open--
	m.open--
	o := c.owner
	ow := &m.owners[o]
	ow.open--
	m.freeConns = append(m.freeConns, ci)
	if ow.waiters.len() > 0 && ow.alive {
		wj := ow.waiters.pop()
		m.jobs[wj].callWait = m.now - m.jobs[wj].waitFrom
		m.openConn(wj, o)
		return
	}
	if !ow.alive && ow.open == 0 && len(ow.idle) == 0 {
		m.freeOwners = append(m.freeOwners, o)
	}
}

func (m *chainModel) enterTimeWait(h int, s side, port int32) {
	hp := &m.hops[h]
	before := hp.twLive[s]
	if hp.tcpSockets.enterTimeWait(s, m.now, port) {
		m.schedule(hp.nextExpiry(s), ckTWEnd, int32(h), int32(s))
	}
	m.tw[s] += hp.twLive[s] - before
	m.twPeak[s] = max(m.twPeak[s], m.tw[s])
	if m.sink != nil {
		m.ev = Event{Kind: KindTimeWait, At: m.now, Hop: m.hopTag(h), LocalPort: int(port), By: s.word()}
		m.sink(&m.ev)
	}
}

// timeWaitEnd expires hop h's TIME_WAIT sockets on side s that are due,
// freeing the client's ports, and queues one event for the next.
func (m *chainModel) timeWaitEnd(h int, s side) {
	hp := &m.hops[h]
	for {
		port, ok := hp.expireOne(s, m.now)
		if !ok {
			break
		}
		if s == sideClient {
			hp.ports--
		}
		m.tw[s]--
		if m.sink != nil {
			m.ev = Event{Kind: KindTimeWaitEnd, At: m.now, Hop: m.hopTag(h), LocalPort: int(port), By: s.word()}
			m.sink(&m.ev)
		}
	}
	if hp.more(s) {
		m.schedule(hp.nextExpiry(s), ckTWEnd, int32(h), int32(s))
	}
}
