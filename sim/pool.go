package sim

import "time"

// policy is the scenario's reuse policy: who keeps connections (and, for
// the PHP policies, DNS answers and TLS sessions) between calls.
type policy uint8

const (
	polNone     policy = iota // a new connection, DNS lookup and handshake per call
	polRequest                // kept for one web request (curl_share_init, a reused handle)
	polProcess                // kept by the worker across requests (curl_share_init_persistent)
	polPool                   // a pool per worker process (redis-py, Go's Transport)
	polUpstream               // nginx "keepalive N": an idle cache per worker, LRU beyond N
)

func policyOf(r Reuse) policy {
	switch r {
	case ReuseNone:
		return polNone
	case ReuseProcess:
		return polProcess
	case ReusePool:
		return polPool
	case ReuseUpstreamKeepalive:
		return polUpstream
	}
	return polRequest
}

// pools holds every cache owner and connection of the run. Slots are
// recycled through free lists so a million-call run keeps only what is open.
type pools struct {
	ownerSlots
	conns     []conn
	freeConns []int32
	connIDs   int
}

// owner is one cache: a curl easy handle or share handle, a pool, or nginx's
// per-worker keep-alive cache. It keeps idle connections (most recently used
// last), the DNS answer and a TLS session.
type owner struct {
	idle    []int32
	open    int // connections it owns, idle or in use
	waiters ring[int32]
	dnsAt   time.Duration // when the cached answer was resolved
	hasDNS  bool
	hasTLS  bool
	alive   bool
}

type connState uint8

const (
	connActive connState = iota
	connIdle
	connClosed
)

type conn struct {
	id          int
	gen         int32         // bumped when the slot's connection closes: its timers are stale
	timerAt     time.Duration // the server idle timer pending for it (0: none)
	owner       int32
	state       connState
	port        int
	created     time.Duration
	lastUsed    time.Duration // the client finished its last call on it
	srvIdleAt   time.Duration // the server finished its last response on it
	srvClosedAt time.Duration
	srvClosed   bool
	served      int
	cwnd        int // server's congestion window, in segments
}

// ownerSlots holds the cache owners of a run, both engines', in slots
// recycled through a free list.
type ownerSlots struct {
	owners     []owner
	freeOwners []int32
}

// newOwner takes a slot for a new, empty owner, keeping a recycled slot's
// idle list's memory.
func (m *ownerSlots) newOwner() int32 {
	var o int32
	if n := len(m.freeOwners); n > 0 {
		o = m.freeOwners[n-1]
		m.freeOwners = m.freeOwners[:n-1]
		idle := m.owners[o].idle[:0]
		m.owners[o] = owner{idle: idle}
	} else {
		m.owners = append(m.owners, owner{})
		o = int32(len(m.owners) - 1)
	}
	m.owners[o].alive = true
	return o
}

// ownerFor returns the owner that keeps data of kind what (ShareDNS,
// ShareConnect or ShareSSLSession) for the current call of request ri.
func (m *model) ownerFor(ri int32, what uint8) int32 {
	r := &m.reqs[ri]
	switch m.policy {
	case polPool, polUpstream:
		return m.workerOwner(r.worker, 0)
	case polProcess:
		mask := m.shareMasks[(r.id-1)%len(m.shareMasks)]
		if mask&what != 0 {
			return m.workerOwner(r.worker, mask)
		}
	}
	if r.owner < 0 {
		r.owner = m.newOwner()
	}
	return r.owner
}

func (m *model) workerOwner(w int32, idx uint8) int32 {
	o := m.ws[w].owners[idx]
	if o < 0 {
		o = m.newOwner()
		m.ws[w].owners[idx] = o
	}
	return o
}

// endCallScope ends the per-call handle of reuse = none.
func (m *model) endCallScope(ri int32) {
	if r := &m.reqs[ri]; m.policy == polNone && r.owner >= 0 {
		m.dropOwner(r.owner, ReasonEndOfCall)
		r.owner = -1
	}
}

// endRequestScope destroys the request's handle: PHP frees it at the end of
// the request and curl closes its connections (the client closes first).
func (m *model) endRequestScope(ri int32) {
	if r := &m.reqs[ri]; r.owner >= 0 {
		m.dropOwner(r.owner, ReasonEndOfRequest)
		r.owner = -1
	}
}

// dropOwner closes an owner's idle connections. Connections still in use
// are closed when their call ends.
func (m *model) dropOwner(o int32, reason CloseReason) {
	ow := &m.owners[o]
	ow.alive = false
	for _, ci := range ow.idle {
		m.closeConn(ci, sideClient, reason)
	}
	ow.idle = ow.idle[:0]
	for ow.waiters.len() > 0 {
		m.acquire(ow.waiters.pop()) // calls waiting on a gone pool start over
		ow = &m.owners[o]
	}
	if ow.open == 0 {
		m.freeOwners = append(m.freeOwners, o)
	}
}

// takeIdle pops the most recently used idle connection of o that can carry
// a request sent now, closing the ones that cannot. It returns -1 when none
// is left. raced reports a connection the server is closing as the request
// goes out: the keep-alive race, which the client sees when the server's
// FIN arrives, at seen. dropped counts the connections it closed on the
// way (found closed or too old), each of which costs the client drop_cpu.
func (m *model) takeIdle(o int32) (ci int32, raced bool, seen time.Duration, dropped int) {
	for {
		ow := &m.owners[o]
		n := len(ow.idle)
		if n == 0 {
			return -1, false, 0, dropped
		}
		ci = ow.idle[n-1]
		ow.idle = ow.idle[:n-1]
		c := &m.conns[ci]
		closeAt, closing := m.serverCloseTime(c)
		switch findIdle(idleConn{c.lastUsed, c.created, closeAt, closing}, m.now, m.half, m.s.MaxIdleAge, m.s.MaxLifetime) {
		case idleDead:
			// The client drops it without a TIME_WAIT of its own.
			m.closeConn(ci, sideServer, ReasonDead)
			dropped++
		case idleTooOld:
			m.closeConn(ci, sideClient, ReasonMaxIdleAge)
			dropped++
		case idleTooLong:
			m.closeConn(ci, sideClient, ReasonMaxLifetime)
			dropped++
		case idleRaced:
			// The request reaches the server after its idle timer fired.
			if !c.srvClosed {
				m.serverClose(ci, closeAt, ReasonIdleTimeout)
			}
			m.closeConn(ci, sideServer, ReasonReset)
			return -1, true, closeAt + m.half, dropped
		default:
			c.state = connActive // a pending idle timer will find it busy
			return ci, false, 0, dropped
		}
	}
}

// serverCloseTime is when the server closes c if nothing arrives: its
// keep-alive timer, unless it already closed.
func (m *model) serverCloseTime(c *conn) (time.Duration, bool) {
	if c.srvClosed {
		return c.srvClosedAt, true
	}
	if m.s.KeepaliveTimeout > 0 {
		return c.srvIdleAt + m.s.KeepaliveTimeout, true
	}
	return 0, false
}

// release returns connection ci to its owner after a call: to a waiting
// call, to the idle list, or closed when the owner keeps no more.
func (m *model) release(ci int32) {
	c := &m.conns[ci]
	o := c.owner
	ow := &m.owners[o]
	if !ow.alive {
		m.closeConn(ci, sideClient, ReasonEndOfRequest)
		return
	}
	if ow.waiters.len() > 0 {
		ri := ow.waiters.pop()
		m.reqs[ri].queued = m.now - m.reqs[ri].waitFrom
		m.useConn(ri, ci)
		return
	}
	if m.policy == polPool && m.s.PoolMaxIdle > 0 && len(ow.idle) >= m.s.PoolMaxIdle {
		m.closeConn(ci, sideClient, ReasonIdleFull) // Go: errTooManyIdleHost closes the returning one
		return
	}
	c.state = connIdle
	c.lastUsed = m.now
	ow.idle = append(ow.idle, ci)
	if m.socketEvents() {
		m.ev = Event{Kind: KindIdle, At: m.now, Conn: c.id, LocalPort: c.port}
		m.emit(&m.ev)
	}
	if m.s.KeepaliveTimeout > 0 && c.timerAt == 0 {
		// One pending timer per connection: if an older one is still
		// queued it fires first and moves itself to the new deadline.
		c.timerAt = c.srvIdleAt + m.s.KeepaliveTimeout
		m.schedule(c.timerAt, evServerIdle, ci, c.gen)
	}
	if m.policy == polUpstream && len(ow.idle) > m.s.UpstreamKeepalive {
		lru := ow.idle[0]
		copy(ow.idle, ow.idle[1:])
		ow.idle = ow.idle[:len(ow.idle)-1]
		m.closeConn(lru, sideClient, ReasonEvict)
	}
}

// serverIdle fires when connection ci may have sat idle for the keep-alive
// timeout; if it was used since, the timer moves to the new deadline.
func (m *model) serverIdle(ci, gen int32) {
	c := &m.conns[ci]
	if c.gen != gen {
		return
	}
	c.timerAt = 0
	if c.state != connIdle {
		return // busy: release schedules the timer again
	}
	if c.srvClosed {
		// The server's FIN has reached the client. Go's Transport and
		// nginx watch idle connections and drop a closed one at once; curl
		// notices on its next use.
		if m.policy == polPool || m.policy == polUpstream {
			ow := &m.owners[c.owner]
			for i, x := range ow.idle {
				if x == ci {
					ow.idle = append(ow.idle[:i], ow.idle[i+1:]...)
					break
				}
			}
			m.closeConn(ci, sideServer, ReasonDead)
		}
		return
	}
	if deadline := c.srvIdleAt + m.s.KeepaliveTimeout; m.now < deadline {
		c.timerAt = deadline
		m.schedule(deadline, evServerIdle, ci, gen)
		return
	}
	m.serverClose(ci, m.now, ReasonIdleTimeout)
	if m.policy == polPool || m.policy == polUpstream {
		m.schedule(m.now+m.half, evServerIdle, ci, c.gen) // when the FIN arrives
	}
}
