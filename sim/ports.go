package sim

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
		m.ev = Event{Kind: KindTimeWaitEnd, At: m.now, LocalPort: int(e.port), By: sideClient.String(), Reason: string(ReasonReused)}
		m.emit(&m.ev)
		return int(e.port), true
	}
	if m.free[1].len() > 0 {
		return int(m.free[1].pop()), true
	}
	return 0, false
}
