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

// twEntry is a socket in TIME_WAIT: when it entered, the client port of
// its connection, and its serial: on the client's side its number in the
// port search (ports.enterTimeWait), on the server's the one srvTW holds
// for the port.
type twEntry struct {
	at     time.Duration
	port   int32
	serial uint32
}

// tcpSockets is one hop's TCP state that outlives connections:
// connect()'s search of the client's local ports
// and each side's TIME_WAIT sockets. A side's queue is in order of entry,
// so one expiry timer per side is enough; a socket taken over before it
// expires leaves its entry behind, no longer live, to be dropped when it
// comes to the front.
type tcpSockets struct {
	search    ports
	twq       [2]ring[twEntry]
	twLive    [2]int // sockets in TIME_WAIT now
	twPeak    [2]int
	twEntered [2]int
	twTimer   [2]bool // an expiry event is queued for the side's oldest entry
	// By client port, from the range's low end, a page at a time as in
	// the port search: the serial of the server's TIME_WAIT socket for it
	// (0: none), so a run of a few connections stays cheap.
	srvTW     []*[portPage]uint32
	srvSerial uint32
	loPort    int
	// Taken over: client TIME_WAIT ports connect() took back (tcp_tw_reuse),
	// and server TIME_WAIT sockets a new SYN from the same port took over.
	twReused, twTakenOver int
}

func (k *tcpSockets) configure(r PortRange, twReuse bool, seed uint64) {
	k.search.configure(r, twReuse, seed)
	k.loPort = r.Lo
}

// srvSlot is where the server's TIME_WAIT serial for port is kept; nil
// when none was ever kept on its page and add is false.
func (k *tcpSockets) srvSlot(port int32, add bool) *uint32 {
	j := int(port) - k.loPort
	if j < 0 {
		return nil // a port outside the range (tests' hand-made ones)
	}
	i := j / portPage
	if i >= len(k.srvTW) {
		if !add {
			return nil
		}
		k.srvTW = append(k.srvTW, make([]*[portPage]uint32, i+1-len(k.srvTW))...)
	}
	pg := k.srvTW[i]
	if pg == nil {
		if !add {
			return nil
		}
		pg = new([portPage]uint32)
		k.srvTW[i] = pg
	}
	return &pg[j%portPage]
}

// connect finds a local port for connect() at now, or reports
// EADDRNOTAVAIL. On the port it lands on it may take over the client's own
// TIME_WAIT socket (tcp_tw_reuse: clientTW); and a port whose last
// connection the server closed first is free on the client's side, so if
// the server still holds that TIME_WAIT socket, the new SYN takes it over
// (tcp_timewait_state_process: same four-tuple, newer timestamp: serverTW).
func (k *tcpSockets) connect(now time.Duration) (port int32, clientTW, serverTW, ok bool) {
	p, tookOver, ok := k.search.connect(now)
	if !ok {
		return 0, false, false, false
	}
	port = int32(p)
	if tookOver {
		k.twLive[sideClient]--
		k.twReused++
	}
	if slot := k.srvSlot(port, false); slot != nil && *slot != 0 {
		*slot = 0
		k.twLive[sideServer]--
		k.twTakenOver++
		serverTW = true
	}
	return port, tookOver, serverTW, true
}

// enterTimeWait puts side s's socket of the connection from client port
// port into TIME_WAIT now. It reports whether the side's expiry timer must
// be queued, for nextExpiry.
func (k *tcpSockets) enterTimeWait(s side, now time.Duration, port int32) (arm bool) {
	e := twEntry{at: now, port: port}
	if s == sideServer {
		k.srvSerial++
		e.serial = k.srvSerial
		slot := k.srvSlot(port, true)
		if slot == nil {
			slot = new(uint32) // outside the range: kept nowhere, never taken over
		}
		if *slot != 0 {
			k.twLive[s]-- // cannot happen: the client's port was in use
		}
		*slot = e.serial
	} else {
		e.serial = k.search.enterTimeWait(int(port), now)
	}
	k.twq[s].push(e)
	k.twEntered[s]++
	k.twLive[s]++
	k.twPeak[s] = max(k.twPeak[s], k.twLive[s])
	if k.twTimer[s] {
		return false
	}
	k.twTimer[s] = true
	return true
}

// nextExpiry is when side s's oldest TIME_WAIT socket expires.
func (k *tcpSockets) nextExpiry(s side) time.Duration { return k.twq[s].peek().at + TimeWaitLen }

// expireOne ends side s's oldest TIME_WAIT socket if it is due at now
// (freeing the client's port), dropping on the way the entries of sockets
// taken over; ok is false when none is due. After the last, more reports
// whether the timer goes on, for nextExpiry.
func (k *tcpSockets) expireOne(s side, now time.Duration) (port int32, ok bool) {
	tw := &k.twq[s]
	for tw.len() > 0 {
		e := tw.peek()
		var live bool
		if s == sideServer {
			slot := k.srvSlot(e.port, false)
			live = slot == nil || *slot == e.serial // nil: outside the range, kept nowhere
		} else {
			live = k.search.holdsTimeWait(int(e.port), e.serial)
		}
		if live && e.at+TimeWaitLen > now {
			break
		}
		tw.pop()
		if !live {
			continue
		}
		if s == sideServer {
			if slot := k.srvSlot(e.port, false); slot != nil {
				*slot = 0
			}
		} else {
			k.search.leaveTimeWait(int(e.port), e.serial)
		}
		k.twLive[s]--
		return e.port, true
	}
	return 0, false
}

// more reports whether side s's expiry timer goes on after expireOne.
func (k *tcpSockets) more(s side) bool {
	k.twTimer[s] = k.twq[s].len() > 0
	return k.twTimer[s]
}
