package sim

import (
	"math/bits"
	"math/rand/v2"
	"time"
)

// PortShufflePeriod is how often Linux moves the start of its local-port
// search to a new random point: EPHEMERAL_PORT_SHUFFLE_PERIOD (10 * HZ) in
// net/core/secure_seq.c, whose secure_ipv4_port_ephemeral hashes
// jiffies / EPHEMERAL_PORT_SHUFFLE_PERIOD with the addresses and the
// destination port ("tcp: resalt the secret every 10 seconds", 2022).
const PortShufflePeriod = 10 * time.Second

// portPage is how many ports share one lazily allocated page of TIME_WAIT
// sequence numbers.
const portPage = 512

// ports is the client's local-port space towards the one destination of a
// scenario, searched the way Linux's connect() searches it
// (__inet_hash_connect in net/ipv4/inet_hashtables.c, kernel 6.18):
//
//   - The search starts at table_perturb[index] + (port_offset >> 32), where
//     port_offset hashes the addresses, the destination port and the time in
//     10 s periods (secure_ipv4_port_ephemeral): a random point that moves
//     to another random point every 10 s, at instants that do not depend on
//     when the run began.
//   - It tries the ports of the parity of the range's low end first (even
//     ones for 32768-60999), in order from the start, wrapping around; then,
//     only if none will do, the other parity from start + 1. The range's
//     size is rounded down to even first, so an odd-sized range never hands
//     out its last port.
//   - A port will do if no socket holds it, or if its socket to this
//     destination is in TIME_WAIT and check_established agrees to take it
//     over: tcp_twsk_unique (net/ipv4/tcp_ipv4.c) does so when tcp_tw_reuse
//     applies (1, or 2 with a loopback address) and the socket entered
//     TIME_WAIT more than tcp_tw_reuse_delay (1000 ms) ago. Otherwise the
//     search steps over it. Nothing found: EADDRNOTAVAIL.
//   - After each connect the start moves on by max(i, 2·r) + 2, i being how
//     far past the start the port was found and r = get_random_u32_below(8):
//     1 to 8 ports of the parity when the start itself was free, just past
//     the port taken when the search had to skip busy ones.
//
// So with tcp_tw_reuse a TIME_WAIT port more than a second old is taken over
// wherever the search lands on it, free ports or not, and how many are taken
// over is chance. The model draws the starts, the steps and the instant of
// the first reshuffle from its own generator, seeded by the run's seed, so
// that the port choice does not move the other random draws of the run.
// Left out: ip_local_reserved_ports, ports bound with bind() (the search
// skips both), and other destinations sharing the perturbation slot.
//
// State: one bit a port, per parity, set while the port cannot be taken
// (open, or in a TIME_WAIT that cannot be taken over yet), with a summary
// bit a word so that a search over a nearly full range stays short; a queue
// of the TIME_WAIT sockets younger than a second, and each TIME_WAIT
// socket's number by port, to tell one taken over from one still there
// (with tcp_tw_reuse only). Nothing is allocated until the first connect,
// the numbers a page of ports at a time, so a run of a few connections
// stays cheap. Each engine keeps its own TIME_WAIT queue for expiry and
// tells the search when a socket enters and leaves TIME_WAIT.
type ports struct {
	// Set by configure; nothing is allocated until the first connect.
	prange   PortRange
	twReuse  bool
	seed     uint64
	ready    bool
	nextSeqN uint32 // TIME_WAIT sockets numbered so far (with tcp_tw_reuse)

	lo        int           // low end of ip_local_port_range
	remaining int           // the kernel's remaining: the range's size, rounded down to even
	half      [2]int        // ports of each parity class tried
	busy      [2][]uint64   // per class, bit k: port lo + 2k + class cannot be taken
	some      [2][]uint64   // per class, bit i: busy word i has a port that can be taken
	avail     [2]int        // ports of each class that can be taken
	start     int           // where the next search starts, an even offset from lo
	shuffleAt time.Duration // when the kernel's next 10 s period begins
	portRNG   rand.PCG
	rbits     uint64 // unused random bits, three at a time
	rbitsLeft int
	young     ring[portTW]        // TIME_WAIT sockets not yet old enough to take over, oldest first
	twSeq     []*[portPage]uint32 // per port: the number of its TIME_WAIT socket, 0 if none
}

// portTW is a client socket in TIME_WAIT as the port search knows it.
type portTW struct {
	at   time.Duration // entered TIME_WAIT
	port int32
	seq  uint32
}

// configure says which range to search and whether tcp_tw_reuse applies;
// seed seeds the search's own random draws.
func (p *ports) configure(r PortRange, twReuse bool, seed uint64) {
	*p = ports{prange: r, twReuse: twReuse, seed: seed}
}

// setup allocates the port space, on the first connect at time now.
func (p *ports) setup(now time.Duration) {
	p.ready = true
	p.lo = p.prange.Lo
	size := p.prange.Size()
	p.remaining = size
	if size > 1 {
		p.remaining &^= 1
		p.half = [2]int{p.remaining / 2, p.remaining / 2}
	} else {
		p.half = [2]int{1, 0}
	}
	for c := range p.busy {
		n := p.half[c]
		w := make([]uint64, (n+63)/64)
		if r := n % 64; r != 0 {
			w[len(w)-1] = ^uint64(0) << r // past the class's end: never free
		}
		some := make([]uint64, (len(w)+63)/64)
		for i := range w {
			some[i>>6] |= 1 << (i & 63)
		}
		p.busy[c], p.some[c], p.avail[c] = w, some, n
	}
	if p.twReuse {
		p.twSeq = make([]*[portPage]uint32, (size+portPage-1)/portPage)
	}
	p.portRNG.Seed(p.seed^0x5851f42d4c957f2d, p.seed+0x14057b7ef767814f)
	// The kernel's periods count jiffies since boot: the run begins at a
	// random point of one.
	p.shuffleAt = now + 1 + time.Duration(p.randBelow(uint64(PortShufflePeriod)))
	p.shuffle()
}

// shuffle starts the search at a new random point, as a new
// secure_ipv4_port_ephemeral hash does: another table_perturb slot and
// another offset.
func (p *ports) shuffle() {
	p.start = 2 * int(p.randBelow(uint64(p.half[0])))
}

// randBelow returns a uniform number in [0, n).
func (p *ports) randBelow(n uint64) uint64 {
	hi, _ := bits.Mul64(p.portRNG.Uint64(), n)
	return hi
}

// rand8 returns get_random_u32_below(8).
func (p *ports) rand8() int {
	if p.rbitsLeft == 0 {
		p.rbits, p.rbitsLeft = p.portRNG.Uint64(), 21
	}
	r := int(p.rbits & 7)
	p.rbits >>= 3
	p.rbitsLeft--
	return r
}

// seqOf is where port's TIME_WAIT sequence number is kept.
func (p *ports) seqOf(port int) *uint32 {
	j := uint(port - p.lo)
	pg := p.twSeq[j/portPage]
	if pg == nil {
		pg = new([portPage]uint32)
		p.twSeq[j/portPage] = pg
	}
	return &pg[j%portPage]
}

// isBusy reports whether port cannot be taken.
func (p *ports) isBusy(port int) bool {
	j := uint(port - p.lo)
	c, k := j&1, j>>1
	return p.busy[c][k>>6]&(1<<(k&63)) != 0
}

// take marks a port that could be taken as one that cannot.
func (p *ports) take(port int) {
	j := uint(port - p.lo)
	c, k := j&1, j>>1
	w := &p.busy[c][k>>6]
	*w |= 1 << (k & 63)
	p.avail[c]--
	if *w == ^uint64(0) {
		i := k >> 6
		p.some[c][i>>6] &^= 1 << (i & 63)
	}
}

// release marks a port that could not be taken as one that can.
func (p *ports) release(port int) {
	j := uint(port - p.lo)
	c, k := j&1, j>>1
	p.busy[c][k>>6] &^= 1 << (k & 63)
	p.avail[c]++
	i := k >> 6
	p.some[c][i>>6] |= 1 << (i & 63)
}

// next returns the first index of class c at or after k0 that can be taken,
// wrapping around; the class must have one.
func (p *ports) next(c, k0 int) int {
	w := p.busy[c]
	i := k0 >> 6
	if x := ^w[i] &^ (uint64(1)<<(k0&63) - 1); x != 0 {
		return i<<6 + bits.TrailingZeros64(x)
	}
	// The next word with a free port, from the summary: after word i, or
	// from the start (word i itself again, below k0).
	some := p.some[c]
	j := i + 1
	if s := j >> 6; s < len(some) {
		if x := some[s] &^ (uint64(1)<<(j&63) - 1); x != 0 {
			i = s<<6 + bits.TrailingZeros64(x)
			return i<<6 + bits.TrailingZeros64(^w[i])
		}
		for s++; s < len(some); s++ {
			if some[s] != 0 {
				i = s<<6 + bits.TrailingZeros64(some[s])
				return i<<6 + bits.TrailingZeros64(^w[i])
			}
		}
	}
	for s := range some {
		if some[s] != 0 {
			i = s<<6 + bits.TrailingZeros64(some[s])
			return i<<6 + bits.TrailingZeros64(^w[i])
		}
	}
	panic("sim: no free port in a class that counts one")
}

// connect finds a local port for connect() at time now, the search of
// __inet_hash_connect (see ports): ok is false for EADDRNOTAVAIL, and
// tookOver says the port's TIME_WAIT socket was taken over.
func (p *ports) connect(now time.Duration) (port int, tookOver, ok bool) {
	if !p.ready {
		p.setup(now)
	}
	if p.twReuse {
		p.mature(now)
	}
	if now >= p.shuffleAt {
		p.shuffleAt += PortShufflePeriod * (1 + (now-p.shuffleAt)/PortShufflePeriod)
		p.shuffle()
	}
	for c := 0; c < 2; c++ {
		if p.avail[c] == 0 {
			continue
		}
		k0 := p.start >> 1
		k := p.next(c, k0)
		i := 2 * (k - k0)
		if i < 0 {
			i += p.remaining
		}
		// table_perturb[index] += max(i, get_random_u32_below(8) * step) + step
		p.start += max(i, 2*p.rand8()) + 2
		for p.start >= p.remaining {
			p.start -= p.remaining
		}
		port = p.lo + 2*k + c
		p.take(port)
		if !p.twReuse {
			return port, false, true // a TIME_WAIT port is never free to take
		}
		if seq := p.seqOf(port); *seq != 0 {
			// check_established found the port's TIME_WAIT socket old
			// enough: tcp_twsk_unique lets connect() take it over.
			*seq = 0
			return port, true, true
		}
		return port, false, true
	}
	return 0, false, false
}

// mature makes the TIME_WAIT ports whose sockets entered TIME_WAIT more
// than TWReuseDelay ago ones the search may take over (tcp_twsk_unique:
// time_after32(tcp_clock_ms(), tw_entry_stamp + tcp_tw_reuse_delay)).
func (p *ports) mature(now time.Duration) {
	for p.young.len() > 0 {
		e := p.young.peek()
		if now-e.at <= TWReuseDelay {
			return
		}
		p.young.pop()
		if *p.seqOf(int(e.port)) == e.seq {
			p.release(int(e.port))
		}
	}
}

// free gives a port back: its socket is gone (the server closed first).
func (p *ports) free(port int) { p.release(port) }

// enterTimeWait records that the client's socket on port entered TIME_WAIT
// at time at; the port stays taken. It returns the socket's number, which
// leaveTimeWait and holdsTimeWait need (0 without tcp_tw_reuse: nothing is
// ever taken over then).
func (p *ports) enterTimeWait(port int, at time.Duration) uint32 {
	if !p.twReuse {
		return 0
	}
	return p.number(port, at)
}

// number numbers the TIME_WAIT socket on port and queues it to become one
// the search may take over.
func (p *ports) number(port int, at time.Duration) uint32 {
	if p.nextSeqN++; p.nextSeqN == 0 {
		p.nextSeqN = 1 // 0 marks a port without one; a socket lives 60 s, far less than a wrap
	}
	*p.seqOf(port) = p.nextSeqN
	p.young.push(portTW{at: at, port: int32(port), seq: p.nextSeqN})
	return p.nextSeqN
}

// holdsTimeWait reports whether TIME_WAIT socket seq still holds port, or
// was taken over by a connect().
func (p *ports) holdsTimeWait(port int, seq uint32) bool {
	return seq == 0 || *p.seqOf(port) == seq
}

// leaveTimeWait ends TIME_WAIT socket seq, which still holds port: the
// port is free.
func (p *ports) leaveTimeWait(port int, seq uint32) {
	if seq != 0 {
		*p.seqOf(port) = 0
		if !p.isBusy(port) {
			return // already free to take over
		}
	}
	p.release(port)
}
