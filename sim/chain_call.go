package sim

// A chain's calls from one tier to the next: finding a connection,
// opening one (lookup, TCP, TLS), the exchange and its end.

import "time"

// callerPolicy is how the side that connects over hop h keeps connections.
func (m *chainModel) callerPolicy(h int) policy {
	if h == 0 {
		if m.s.ClientKeepalive {
			return polPool
		}
		return polNone
	}
	return m.tiers[h-1].policy
}

// callerScenario is the scenario of the side that connects over hop h.
func (m *chainModel) callerScenario(h int) *Scenario {
	if h == 0 {
		return &m.s
	}
	return &m.tiers[h-1].s
}

// ownerFor returns the cache that keeps job ji's data of kind what
// (ShareConnect: its connections, ShareDNS, ShareSSLSession) over hop h: a
// user's own connection, a worker's pool or keep-alive cache, a worker's
// persistent share handle whose set holds what, or one for the request
// (or, without reuse, the call).
func (m *chainModel) ownerFor(ji int32, h int, what uint8) int32 {
	j := &m.jobs[ji]
	pol := m.callerPolicy(h)
	if h == 0 && j.user >= 0 && pol == polPool {
		o := m.userOwner[j.user]
		if o < 0 {
			o = m.newOwner()
			m.userOwner[j.user] = o
		}
		return o
	}
	if h > 0 {
		t := &m.tiers[j.tier]
		k := -1
		switch pol {
		case polPool, polUpstream:
			k = 0
		case polProcess:
			mask := t.shareMasks[0]
			if n := len(t.shareMasks); n > 1 {
				mask = t.shareMasks[(j.req-1)%n]
			}
			if mask&what != 0 {
				k = int(mask)
			}
		}
		if k >= 0 {
			w := &t.workers[j.worker]
			if w.owners[k] < 0 {
				w.owners[k] = m.newOwner()
			}
			return w.owners[k]
		}
	}
	if j.owner < 0 {
		o := m.newOwner()
		m.jobs[ji].owner = o
		return o
	}
	return j.owner
}

// callBegin starts job ji's next call to the next tier.
func (m *chainModel) callBegin(ji int32) {
	j := &m.jobs[ji]
	j.calls++
	j.callStart, j.callNew, j.callRetry, j.callWait, j.callConn = m.now, false, false, 0, -1
	j.lookup, j.secured, j.handshake = 0, 0, ""
	m.acquire(ji)
}

// acquire finds job ji's call a connection: a kept one, a place in the
// pool's queue, or a new one.
func (m *chainModel) acquire(ji int32) {
	h := int(m.jobs[ji].tier) + 1
	pol := m.callerPolicy(h)
	o := m.ownerFor(ji, h, ShareConnect)
	cs := m.callerScenario(h)
	if pol != polNone {
		ci, raced, seen, dropped := m.takeIdle(o, h)
		// The client drops the connections it found unusable before the
		// call goes on (libcurl, as it looks in its pool).
		drop := m.tiers[h].s.DropCPU
		start := m.now + time.Duration(dropped)*drop
		if raced {
			// The request went out on a connection the server had just
			// closed; the client learns it when the server's FIN arrives,
			// drops that one too, then sends the call again or fails it
			// (raceSeen).
			m.jobs[ji].callRetry = true
			m.hops[h].races++
			m.schedule(max(seen, start)+drop, ckRaceSeen, ji, 0)
			return
		} else if ci >= 0 {
			m.hops[h].reused++
			m.sendRequest(ji, ci, start)
			return
		}
		m.jobs[ji].lookup = start - m.now // before the lookup: openConn adds it
	}
	if pol == polPool && cs.PoolMax > 0 && m.owners[o].open >= cs.PoolMax {
		if cs.PoolFull == "error" {
			m.failCall(ji, ErrorPoolFull)
			return
		}
		m.jobs[ji].waitFrom = m.now
		m.owners[o].waiters.push(ji)
		return
	}
	m.openConn(ji, o)
}

// raceSeen: job ji's call has learnt that the connection it was sent on
// was closed (the keep-alive race): it is sent again on a new connection,
// or fails where the client does not replay it.
func (m *chainModel) raceSeen(ji int32) {
	h := int(m.jobs[ji].tier) + 1
	if !m.callerScenario(h).RetryOnRace {
		m.failCall(ji, ErrorRace)
		return
	}
	m.openConn(ji, m.ownerFor(ji, h, ShareConnect))
}

// openConn opens a connection for job ji's call, kept by owner o: a local
// port, the caller's own work to open it, then the TCP handshake.
func (m *chainModel) openConn(ji, o int32) {
	j := &m.jobs[ji]
	h := int(j.tier) + 1
	hp := &m.hops[h]
	port, ok := m.allocPort(h)
	if !ok {
		hp.portErrors++
		if m.firstPortErr == nil {
			t := roundS(m.now)
			m.firstPortErr = &t
		}
		if m.counted() {
			m.ev = Event{Kind: KindPortError, At: m.now, Hop: m.hopTag(h), Req: j.req, Call: int(j.calls), Worker: int(j.worker) + 1, Error: string(ErrorNoPort)}
			m.emit()
		}
		m.failCall(ji, ErrorNoPort)
		return
	}
	ci := m.newConn(h, o, port)
	j = &m.jobs[ji]
	j.callNew, j.callConn = true, ci
	// The lookup comes first; connect() waits it out.
	// The lookup comes after what acquire left in j.lookup (the CPU of
	// dropping dead connections).
	nl := resolve(&m.owners[m.ownerFor(ji, h, ShareDNS)], &m.tiers[h].s, m.now+j.lookup)
	j = &m.jobs[ji]
	j.lookup += nl
	j.resolved = m.now + j.lookup
	if nl > 0 {
		hp.lookups++
	}
	hp.connects++
	if m.counted() {
		e := &m.ev // field by field: a literal is built aside and copied
		*e = Event{}
		e.Kind, e.At, e.Hop, e.Req, e.Call, e.Worker = KindOpen, j.resolved, m.hopTag(h), j.req, int(j.calls), int(j.worker)+1
		e.Conn, e.LocalPort = m.conns[ci].id, int(port)
		m.emit()
	}
	if h > 0 {
		if t := &m.tiers[h-1]; t.s.ClientConnTime > 0 {
			m.connWork(ji, t, t.s.ClientConnTime, phConnect)
			return
		}
	}
	m.connect(ji)
}

// connect: after the DNS lookup (openConn), the TCP handshake of job ji's
// new connection takes one round trip, then the hop's TLS handshake, if it
// has one (tlsHandshake: its round trips and CPU, resumed when the
// connection's owner holds a session); the request follows at once.
func (m *chainModel) connect(ji int32) {
	j := &m.jobs[ji]
	h := int(j.tier) + 1
	t := &m.tiers[h]
	ready := m.now + j.lookup + 2*t.half + t.s.ConnectCPU
	j.connected = ready
	if t.s.TLS != TLSNone {
		ow := &m.owners[m.ownerFor(ji, h, ShareSSLSession)]
		hs := tlsHandshake(&t.s, ow.hasTLS)
		ow.hasTLS = true
		if hs.kind == HandshakeFull {
			m.hops[h].tlsFull++
		} else {
			m.hops[h].tlsResumed++
		}
		ready += time.Duration(hs.rtts)*2*t.half + hs.cpu
		j.secured, j.handshake = ready, hs.kind
	}
	ready += time.Duration(t.s.SetupRTTs) * 2 * t.half // the client's own exchanges first (go-redis's HELLO)
	m.sendRequest(ji, j.callConn, ready)
}

// sendRequest sends job ji's call on connection ci at time ready: the
// called tier's job reaches it half a round trip later.
func (m *chainModel) sendRequest(ji, ci int32, ready time.Duration) {
	j := &m.jobs[ji]
	j.callConn = ci
	h := int(j.tier) + 1
	c := &m.conns[ci]
	c.state = connActive
	m.hops[h].calls++
	t := &m.tiers[h]
	start := ready + t.s.ClientCPU + t.half // the caller's own work before the request leaves
	var work time.Duration
	if t.wall {
		work = m.work(t)
		if j.callNew {
			work += t.s.ServerConnTime // accepting it, in the same turn
		}
		if t.s.Threads == 0 && !t.next {
			// Nothing waits on a tier whose work takes time and that
			// takes every request at once: its answer is known now, and
			// it needs no job of its own.
			t.served++
			j.callDone = start + work
			extra := m.serve(ci, t, j.callDone)
			m.schedule(j.callDone+t.half+extra+t.s.ClientReadCPU, ckResponse, ji, 1)
			return
		}
	}
	ki := m.newJob(int8(h), ji)
	j = &m.jobs[ji]
	k := &m.jobs[ki]
	k.req, k.conn, k.worker, k.newConn = j.req, ci, m.conns[ci].worker, j.callNew
	k.start, k.work = start, work
	m.schedule(k.start, ckArrive, ki, 0)
}

// failCall ends job ji's call at once with an error (no connection).
func (m *chainModel) failCall(ji int32, msg ErrorKind) {
	j := &m.jobs[ji]
	h := int(j.tier) + 1
	m.hops[h].errors++
	m.hops[h].calls++ // a call, as its event says, though it never reached the tier
	j.failed = true
	if m.counted() {
		m.ev = Event{Kind: KindCall, At: m.now, Hop: m.hopTag(h), Req: j.req, Call: int(j.calls), Worker: int(j.worker) + 1,
			Retried: j.callRetry, Start: j.callStart, Total: m.now - j.callStart, Error: string(msg)}
		m.emit()
	}
	m.endCallScope(ji, h)
	m.afterCall(ji)
}

// response: the answer of job ki reaches its caller now. The caller keeps
// or closes the connection and goes on.
func (m *chainModel) response(ki int32) {
	k := &m.jobs[ki]
	ji, h, ci, failed := k.parent, int(k.tier), k.conn, k.failed
	m.jobs[ji].callDone = k.srvDone
	m.freeJobs = append(m.freeJobs, ki)
	m.answered(ji, h, ci, failed)
}

// answered: the answer to job ji's call over hop h, on connection ci,
// reaches it now.
func (m *chainModel) answered(ji int32, h int, ci int32, failed bool) {
	j := &m.jobs[ji]
	srvDone := j.callDone
	hp := &m.hops[h]
	total := m.now - j.callStart
	if failed {
		j.failed = true
		hp.errors++
	} else if !m.one { // a chain of one's collector has its calls
		hp.call.Add(total)
	}
	if m.counted() {
		// Field by field into the scratch event: a literal is built aside
		// and copied.
		e := &m.ev
		*e = Event{}
		e.Kind, e.At, e.Hop, e.Req, e.Call, e.Worker = KindCall, m.now, m.hopTag(h), j.req, int(j.calls), int(j.worker)+1
		e.Conn, e.LocalPort, e.NewConn, e.Reused = m.conns[ci].id, int(m.conns[ci].port), j.callNew, !j.callNew
		e.Retried, e.Start, e.Queue, e.StartTransfer, e.Total = j.callRetry, j.callStart, j.callWait, srvDone+m.tiers[h].half-j.callStart, total
		if j.callNew {
			e.NameLookup = j.resolved - j.callStart
			e.Connect = j.connected - j.callStart
			if j.secured > 0 {
				e.AppConnect, e.Handshake = j.secured-j.callStart, j.handshake
			}
		}
		if failed {
			e.Error = "the called tier failed"
		}
		m.emit()
	}
	m.endExchange(ci, h)
	m.endCallScope(ji, h)
	m.afterCall(ji)
}

// endExchange decides what becomes of connection ci after an exchange:
// kept by its owner, or closed by both ends at once when the caller does
// not keep connections (HTTP/1.0, Connection: close) or the server does
// not (its keepalive_requests reached; 1: it never keeps one): the first
// FIN decides where TIME_WAIT lands (server_closes_first,
// simultaneous_close), and the reason says which limit ended it.
func (m *chainModel) endExchange(ci int32, h int) {
	c := &m.conns[ci]
	c.lastUsed = m.now
	srv := &m.tiers[h].s
	limit := srv.KeepaliveRequests > 0 && c.served >= srv.KeepaliveRequests
	if m.callerPolicy(h) != polNone && !limit {
		m.release(ci)
		return
	}
	reason := ReasonNoReuse
	if limit {
		reason = ReasonKeepaliveRequests
	}
	hp := &m.hops[h]
	hp.bothAcc += srv.SimultaneousClose
	hp.serverAcc += srv.ServerClosesFirst
	switch {
	case hp.bothAcc >= 1:
		hp.bothAcc--
		m.closeConn(ci, sideClient, true, ReasonSimultaneous)
	case hp.serverAcc >= 1:
		hp.serverAcc--
		m.closeConn(ci, sideServer, false, reason)
	default:
		m.closeConn(ci, sideClient, false, reason)
	}
}

// endCallScope ends the handle of a call without reuse: a new one each
// call (curl_init per call), so nothing it cached (a DNS answer, a TLS
// session) outlives the call.
func (m *chainModel) endCallScope(ji int32, h int) {
	if j := &m.jobs[ji]; m.callerPolicy(h) == polNone && j.owner >= 0 {
		o := j.owner
		j.owner = -1
		m.dropOwner(o, ReasonEndOfCall)
	}
}
