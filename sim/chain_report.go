package sim

import (
	"math"
	"time"
)

// HopSummary is one hop of a chain: the connections into one tier, seen
// from both ends. "Client" is the side that connects (the load's users,
// or the workers of the tier before), "server" the tier that accepts.
type HopSummary struct {
	Calls    int `json:"calls"`
	Connects int `json:"connects"`
	Reused   int `json:"reused"`
	Errors   int `json:"errors"`
	// Closes, by the side that closed first; Simultaneous counts the
	// closes where the FINs crossed (both ends hold a TIME_WAIT socket).
	ClosedByClient int `json:"closed_by_client"`
	ClosedByServer int `json:"closed_by_server"`
	Simultaneous   int `json:"simultaneous_closes"`
	// TimeWaitClient and TimeWaitServer count the sockets that entered
	// TIME_WAIT on each side during the run; the peaks are the most held
	// at once (they differ once sockets expire after 60 s, or tcp_tw_reuse
	// takes them).
	TimeWaitClient     int `json:"time_wait_client"`
	TimeWaitServer     int `json:"time_wait_server"`
	TimeWaitClientPeak int `json:"time_wait_client_peak"`
	TimeWaitServerPeak int `json:"time_wait_server_peak"`
	// TimeWaitClientEnd and TimeWaitServerEnd: those still held when the
	// run ended (what netstat shows after the test).
	TimeWaitClientEnd int `json:"time_wait_client_end"`
	TimeWaitServerEnd int `json:"time_wait_server_end"`
	// TimeWaitReused: client ports connect() took back from TIME_WAIT
	// (tcp_tw_reuse, after 1 s); TimeWaitTakenOver: the server's TIME_WAIT
	// sockets a new connection from the same client port took over (its
	// SYN ends them). Both keep the counts below one per connection.
	TimeWaitReused    int `json:"time_wait_reused"`
	TimeWaitTakenOver int `json:"time_wait_taken_over"`
	OpenPeak          int `json:"open_peak"`
	IdlePeak          int `json:"idle_peak"`
	// PortsInUsePeak: the client's local ports held at once (open
	// connections and its TIME_WAIT sockets), from ip_local_port_range.
	PortsInUsePeak int  `json:"ports_in_use_peak"`
	PortErrors     int  `json:"port_errors"`
	Races          int  `json:"races"`
	Call           Stat `json:"call_ms"`
	// Lookups: the DNS lookups its new connections waited for (none
	// answered from the caller's cache); TLSFull and TLSResumed: their TLS
	// handshakes, by kind (0-RTT counts as resumed). None on a hop without
	// DNS or TLS.
	Lookups    int `json:"lookups"`
	TLSFull    int `json:"tls_full"`
	TLSResumed int `json:"tls_resumed"`
}

// TierSummary is one tier of a chain.
type TierSummary struct {
	Requests int `json:"requests"`
	// Utilisation: the share of its workers' time spent working (1: every
	// process busy all the run); WorkMS: work per request.
	Utilisation float64 `json:"utilisation"`
	WorkMS      float64 `json:"work_ms"`
	// Queue: what a request waited for a thread and for its process.
	Queue Stat `json:"queue_ms"`
}

// HopSample is one hop's gauges in a time-series sample.
type HopSample struct {
	Open           int `json:"open"`
	Idle           int `json:"idle"`
	TimeWait       int `json:"time_wait"`
	ServerTimeWait int `json:"server_time_wait"`
}

func (m *chainModel) sample() {
	if m.one {
		m.appendSample(m.oneSample())
		return
	}
	x := Sample{
		T:              roundS(m.now),
		Open:           m.open,
		TimeWait:       m.tw[sideClient],
		ServerTimeWait: m.tw[sideServer],
		Hops:           make([]HopSample, len(m.hops)),
	}
	portsInUse := 0
	connects, errs := 0, 0
	for i := range m.hops {
		hp := &m.hops[i]
		x.Hops[i] = HopSample{Open: hp.open, Idle: hp.idle, TimeWait: hp.twLive[sideClient], ServerTimeWait: hp.twLive[sideServer]}
		portsInUse = max(portsInUse, hp.ports)
		connects += hp.connects
		errs += hp.errors
	}
	x.PortsInUse = portsInUse
	x.Requests = m.requests - m.lastSample[0]
	x.Connects = connects - m.lastSample[1]
	x.Errors = errs - m.lastSample[2]
	m.lastSample = [3]int{m.requests, connects, errs}
	m.appendSample(x)
}

func (m *chainModel) appendSample(x Sample) {
	if n := len(m.series.Samples); n > 0 && m.series.Samples[n-1].T == x.T {
		return // the final sample fell on a sampling instant
	}
	m.series.Append(x)
}

func (m *chainModel) result() *Result {
	if m.one {
		return m.oneResult()
	}
	s := Summary{
		Requests:           m.requests,
		FailedRequests:     m.failed,
		TimeWaitPeak:       m.twPeak[sideClient],
		ServerTimeWaitPeak: m.twPeak[sideServer],
		OpenPeak:           m.openPeak,
		FirstPortErrorS:    m.firstPortErr,
		NumConnects:        []int{},
		ConnectsPerWorker:  []int{},
		Chain:              make([]string, len(m.tiers)),
		Hop:                map[string]*HopSummary{},
		Tier:               map[string]*TierSummary{},
	}
	for i := range m.tiers {
		t, hp := &m.tiers[i], &m.hops[i]
		s.Chain[i] = t.name
		s.Calls += hp.calls
		s.Connects += hp.connects
		s.Reused += hp.reused
		s.Errors += hp.errors
		s.PortErrors += hp.portErrors
		s.Races += hp.races
		s.Hop[t.name] = &HopSummary{
			Calls: hp.calls, Connects: hp.connects, Reused: hp.reused, Errors: hp.errors,
			ClosedByClient: hp.closedBy[sideClient], ClosedByServer: hp.closedBy[sideServer], Simultaneous: hp.both,
			TimeWaitClient: hp.twEntered[sideClient], TimeWaitServer: hp.twEntered[sideServer],
			TimeWaitClientPeak: hp.twPeak[sideClient], TimeWaitServerPeak: hp.twPeak[sideServer],
			TimeWaitClientEnd: hp.twLive[sideClient], TimeWaitServerEnd: hp.twLive[sideServer],
			TimeWaitReused: hp.twReused, TimeWaitTakenOver: hp.twTakenOver,
			OpenPeak: hp.openPeak, IdlePeak: hp.idlePeak, PortsInUsePeak: hp.portsPeak,
			PortErrors: hp.portErrors, Races: hp.races, Call: hp.call.Stat(),
			Lookups: hp.lookups, TLSFull: hp.tlsFull, TLSResumed: hp.tlsResumed,
		}
	}
	span := m.lastEnd - m.firstStart
	for i := range m.tiers {
		t := &m.tiers[i]
		ts := &TierSummary{Requests: t.served, Queue: t.queue.Stat()}
		if span > 0 {
			ts.Utilisation = math.Round(float64(t.busy)/float64(span)/float64(len(t.workers))*1000) / 1000
		}
		if t.served > 0 {
			ts.WorkMS = roundMS(t.busy / time.Duration(t.served))
		}
		s.Tier[t.name] = ts
	}
	s.Response = m.respQ.Stat()
	s.Total = s.Response
	if m.started && span > 0 {
		s.DurationS = roundS(span)
		s.ThroughputRPS = math.Round(float64(m.requests-m.failed)/span.Seconds()*1000) / 1000
	}
	return &Result{Summary: s, Series: m.series, EngineEvents: m.processed}
}
