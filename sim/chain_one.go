package sim

// A chain of one: a block without [[tier]] tables is the single hop of
// the first lessons, workers calling an upstream, run as a chain whose
// first tier is the workers (app_time their work) and whose second is the
// upstream server. The load reaches the workers without a connection of
// its own (the single hop never modelled one), through one listen queue
// (desk), and the upstream's work takes time without waiting for a CPU.
// What the run reports is the hop into the upstream, as a single hop's
// Summary, Series and events (hop 0).

// oneHopTiers are the two tiers of a single-hop scenario s.
func oneHopTiers(s *Scenario) (workers, upstream Scenario) {
	workers, upstream = *s, *s
	workers.Tiers, upstream.Tiers = nil, nil
	workers.ServerTime, workers.ServerJitter = s.AppTime, 0
	workers.RTT = s.ClientRTT
	workers.TLS, workers.DNS = TLSNone, 0
	if s.Mode == ModeCLI {
		workers.MaxRequests = 1 // a fresh process per request
	}
	// The upstream: one process with server_concurrency threads (0:
	// unlimited), which takes the queued requests in turn.
	upstream.Workers, upstream.Threads = 1, s.ServerConcurrency
	upstream.Dispatch = DispatchRoundRobin
	upstream.MaxRequests, upstream.CallsPerRequest = 0, 0
	// Who closes first is closer, but at its keepalive_requests the
	// server says Connection: close and closes first after its response.
	upstream.SimultaneousClose, upstream.ServerClosesFirst = 0, 0
	if s.Closer == SideServer || s.KeepaliveRequests > 0 && (s.Reuse != ReuseNone || s.KeepaliveRequests == 1) {
		upstream.ServerClosesFirst = 1
	}
	return workers, upstream
}

// startDirect: worker w begins the load's request ki, taken from the
// listen queue (desk) at once or when a worker was free: its own work
// (app_time), then its calls.
func (m *chainModel) startDirect(ki, w int32) {
	k := &m.jobs[ki]
	k.worker = w
	t := &m.tiers[0]
	if d := t.s.ServerTime; d > 0 || !t.next {
		k.phase = phWork
		t.busy += d
		m.schedule(m.now+d, ckCPUDone, ki, 0)
		return
	}
	m.afterCall(ki)
}

// directDone: the workers' job ki, the load's request, has its answer,
// which reaches the user half of client_rtt later; the worker takes the
// next queued request.
func (m *chainModel) directDone(ki int32) {
	t := &m.tiers[0]
	t.served++
	w := m.jobs[ki].worker
	m.finishRequest(ki, m.now+m.loadHalf, w)
	if m.desk.leave(w, t.s.MaxRequests) {
		m.dropWorkerOwners(t, w)
	}
	if n := m.desk.nextFor(w); n >= 0 {
		m.startDirect(n, w)
	}
}

// oneResult is a chain of one's result: its hop's calls through the
// collector, as a single hop reports them.
func (m *chainModel) oneResult() *Result {
	hp := &m.hops[1]
	m.col.SetSockets(hp.twPeak[sideClient], max(hp.twPeak[sideServer], hp.twLive[sideServer]+m.closesUnderWay()), hp.openPeak)
	return &Result{Summary: m.col.Summary(), Series: m.series, EngineEvents: m.processed}
}

// closesUnderWay counts the server's FINs on their way to idle connections
// of a pool when the run ends: each drops its connection when it arrives,
// and the server's socket enters TIME_WAIT. A real run's last reading
// waits for them too. (Where the client notices only on its next use, as
// curl does, the server's socket waits in FIN_WAIT2 instead.)
func (m *chainModel) closesUnderWay() int {
	if p := m.tiers[0].policy; p != polPool && p != polUpstream {
		return 0
	}
	n := 0
	for i := range m.conns {
		if c := &m.conns[i]; c.hop == 1 && c.srvClosed && c.state == connIdle {
			n++
		}
	}
	return n
}

// oneSample is a chain of one's time-series sample: its hop's gauges.
func (m *chainModel) oneSample() Sample {
	hp := &m.hops[1]
	x := Sample{
		T:              roundS(m.now),
		Open:           hp.open,
		TimeWait:       hp.twLive[sideClient],
		ServerTimeWait: hp.twLive[sideServer],
		PortsInUse:     hp.open + hp.twLive[sideClient],
		Requests:       m.col.s.Requests - m.lastSample[0],
		Connects:       m.col.s.Connects - m.lastSample[1],
		Errors:         m.col.s.Errors - m.lastSample[2],
	}
	m.lastSample = [3]int{m.col.s.Requests, m.col.s.Connects, m.col.s.Errors}
	return x
}

// hopTag is the Hop of hop h's events: 0 for a chain of one's.
func (m *chainModel) hopTag(h int) uint8 {
	if m.one {
		return 0
	}
	return uint8(h + 1)
}

// emit sends the scratch event to the sink and, in a chain of one, to the
// collector.
func (m *chainModel) emit() {
	if m.one {
		m.col.Add(&m.ev)
	}
	if m.sink != nil {
		m.sink(&m.ev)
	}
}

// counted reports whether the collector or the sink wants calls, requests,
// opens, port errors and ports taken back.
func (m *chainModel) counted() bool { return m.sink != nil || m.one }
