package sim

import "time"

// server holds the upstream's queue when its concurrency is bounded.
type server struct {
	busy  int
	queue ring[int32]
}

// beginCall starts call r.call+1 of request ri now.
func (m *model) beginCall(ri int32) {
	r := &m.reqs[ri]
	r.call++
	r.callStart = m.now
	r.queued, r.retried, r.newConn, r.handshake, r.failMsg, r.portErr = 0, false, false, "", "", false
	r.nameLook, r.connect, r.appConn = 0, 0, 0
	r.conn = -1
	m.acquire(ri)
}

// acquire finds the call a connection: a kept one, a place in the pool's
// queue, or a new one.
func (m *model) acquire(ri int32) {
	o := m.ownerFor(ri, ShareConnect)
	start := m.now
	if m.policy != polNone {
		ci, raced, seen, dropped := m.takeIdle(o)
		// The client drops the connections it found unusable before the
		// call goes on (libcurl, as it looks in its pool).
		start += time.Duration(dropped) * m.s.DropCPU
		if raced {
			// The request went out on a connection the server had just
			// closed; the client learns it when the server's FIN arrives
			// (its reset to the request would come later still), and
			// drops that one too before it sends the call again.
			m.reqs[ri].retried = true
			if !m.s.RetryOnRace {
				m.failCall(ri, seen, ErrorRace, false)
				return
			}
			m.openConn(ri, o, max(seen, start)+m.s.DropCPU)
			return
		}
		if ci >= 0 {
			m.sendOn(ri, ci, start, 0)
			return
		}
	}
	if m.policy == polPool && m.s.PoolMax > 0 && m.owners[o].open >= m.s.PoolMax {
		if m.s.PoolFull == PoolFullError {
			m.failCall(ri, m.now, ErrorPoolFull, false)
			return
		}
		m.reqs[ri].waitFrom = m.now
		m.owners[o].waiters.push(ri)
		return
	}
	m.openConn(ri, o, start)
}

// openConn opens a new connection for request ri's call, starting at t0:
// DNS lookup (unless cached), a local port, the TCP handshake (1 RTT and
// the client's connect_cpu), and the TLS handshake.
func (m *model) openConn(ri, o int32, t0 time.Duration) {
	r := &m.reqs[ri]
	nl := m.lookup(m.ownerFor(ri, ShareDNS), t0)
	tConnect := t0 + nl
	r.nameLook = tConnect - r.callStart
	port, ok := m.allocPort()
	if !ok {
		m.failCall(ri, tConnect, ErrorNoPort, true)
		return
	}
	ci := m.newConn(o, port, tConnect)
	r = &m.reqs[ri]
	r.newConn = true
	if m.socketEvents() || m.col.s.FirstPortErrorS != nil {
		m.ev = Event{Kind: KindOpen, At: tConnect, Req: r.id, Call: r.call, Worker: int(r.worker) + 1, Conn: m.conns[ci].id, LocalPort: port}
		m.emit(&m.ev)
	}
	ready := tConnect + m.s.RTT + m.s.ConnectCPU
	r.connect = ready - r.callStart
	if m.s.TLS != TLSNone {
		tlsO := m.ownerFor(ri, ShareSSLSession)
		hs := tlsHandshake(&m.s, m.owners[tlsO].hasTLS)
		m.owners[tlsO].hasTLS = true
		ready += time.Duration(hs.rtts)*m.s.RTT + hs.cpu
		r = &m.reqs[ri]
		r.appConn = ready - r.callStart
		r.handshake = hs.kind
	}
	ready += time.Duration(m.s.SetupRTTs) * m.s.RTT
	m.sendOn(ri, ci, ready, m.s.ServerConnTime)
}

// useConn sends request ri's call on kept connection ci now.
func (m *model) useConn(ri, ci int32) {
	m.sendOn(ri, ci, m.now, 0)
}

// sendOn sends the call's request on ci at time ready, once the client has
// spent client_cpu on it. It reaches the server half a round trip later;
// extra is server work beyond ServerTime (accepting a new connection).
func (m *model) sendOn(ri, ci int32, ready, extra time.Duration) {
	ready += m.s.ClientCPU // the client's own work before the request leaves
	r := &m.reqs[ri]
	r.conn = ci
	r.ready = ready
	work := m.s.ServerTime + extra
	if m.s.ServerJitter > 0 {
		work += time.Duration((2*m.rng.Float64() - 1) * m.s.ServerJitter * float64(m.s.ServerTime))
	}
	if m.s.ServerConcurrency > 0 {
		r.srvWork = work
		m.schedule(ready+m.half, evServerStart, ri, 0)
		return
	}
	m.respond(ri, ready+m.half+work)
}

func (m *model) serverStart(ri int32) {
	if m.srv.busy < m.s.ServerConcurrency {
		m.srv.busy++
		m.schedule(m.now+m.reqs[ri].srvWork, evServerDone, ri, 0)
		return
	}
	m.srv.queue.push(ri)
}

func (m *model) serverDone(ri int32) {
	m.srv.busy--
	if m.srv.queue.len() > 0 {
		next := m.srv.queue.pop()
		m.srv.busy++
		m.schedule(m.now+m.reqs[next].srvWork, evServerDone, next, 0)
	}
	m.respond(ri, m.now)
}

// respond: the server finished the call's request at srvDone. The first
// byte reaches the client half a round trip later; slow start adds a round
// trip for every further window the response needs, and the client spends
// client_read_cpu on the rest.
func (m *model) respond(ri int32, srvDone time.Duration) {
	r := &m.reqs[ri]
	c := &m.conns[r.conn]
	if c.served > 0 {
		m.restartAfterIdle(c, srvDone-c.srvIdleAt) // idle since its last send
	}
	rounds, cwnd := transferRounds(m.s.ResponseBytes, m.s.MSS, c.cwnd)
	c.cwnd = cwnd
	c.served++
	extra := time.Duration(rounds-1) * m.s.RTT
	c.srvIdleAt = srvDone + extra // the server's idle timer starts after the last byte
	r.srvDone = srvDone
	m.schedule(srvDone+m.half+extra+m.s.ClientReadCPU, evCallDone, ri, 0) // the client reads it all
}

// failCall ends request ri's call with an error at time at.
func (m *model) failCall(ri int32, at time.Duration, msg ErrorKind, portErr bool) {
	r := &m.reqs[ri]
	r.failMsg, r.portErr = msg, portErr
	m.schedule(at, evCallDone, ri, 0)
}

// callDone: the call of request ri ended now. Report it, then keep, return
// or close its connection.
func (m *model) callDone(ri int32) {
	r := &m.reqs[ri]
	e := &m.ev
	*e = Event{Kind: KindCall, At: m.now, Req: r.id, Call: r.call, Worker: int(r.worker) + 1,
		NewConn: r.newConn, Retried: r.retried, Start: r.callStart, Queue: r.queued,
		NameLookup: r.nameLook, Connect: r.connect, AppConnect: r.appConn, Total: m.now - r.callStart,
		Handshake: r.handshake, Error: string(r.failMsg)}
	if r.failMsg != "" {
		if r.portErr {
			pe := Event{Kind: KindPortError, At: m.now, Req: r.id, Call: r.call, Worker: e.Worker, Error: e.Error}
			m.emit(&pe)
		}
		r.failed = true
		m.emit(e)
		m.endCallScope(ri)
		m.nextCall(ri)
		return
	}
	ci := r.conn
	c := &m.conns[ci]
	e.Conn, e.LocalPort, e.Reused = c.id, c.port, !r.newConn
	e.StartTransfer = r.srvDone + m.half - r.callStart
	m.emit(e)
	c.lastUsed = m.now
	switch {
	case m.s.KeepaliveRequests > 0 && c.served >= m.s.KeepaliveRequests:
		m.closeConn(ci, sideServer, ReasonKeepaliveRequests)
	case m.policy == polNone:
		first := sideClient
		if m.s.Closer == SideServer {
			first = sideServer
		}
		m.closeConn(ci, first, ReasonNoReuse)
	default:
		m.release(ci)
	}
	m.endCallScope(ri)
	m.nextCall(ri)
}
