// Package kernel is what a real run asks of the Linux kernel: private
// network and PID namespaces for a lab process, their sysctls, the CPU
// priority of the harness's processes, and the TCP sockets (TIME_WAIT, open
// connections) counted from /proc/net/tcp.
package kernel

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
)

// TCP states in /proc/net/tcp (include/net/tcp_states.h).
const (
	tcpEstablished = 0x01
	tcpTimeWait    = 0x06
)

// closingStates: FIN_WAIT1, FIN_WAIT2, CLOSE_WAIT, LAST_ACK, CLOSING.
var closingStates = map[uint64]bool{0x04: true, 0x05: true, 0x08: true, 0x09: true, 0x0B: true}

// sockKey names one socket: its local and remote ports (all are on
// loopback).
type sockKey struct{ local, remote int }

// sockCount is one reading of the sockets between the clients and one
// server port. A TIME_WAIT socket's value is the time it has left.
type sockCount struct {
	clientTW map[sockKey]time.Duration // TIME_WAIT on the client side (remote port = server)
	serverTW map[sockKey]time.Duration // TIME_WAIT on the server side (local port = server)
	open     int                       // established, client side
	closing  int                       // either side half way through a close
	// established: the server's established sockets, when asked.
	established map[sockKey]bool
}

// readSockets reads /proc/net/tcp and tcp6 of this process's network
// namespace and keeps the sockets to or from the server port; with
// established, it also lists the server's established ones.
func readSockets(serverPort int, established bool) (sockCount, error) {
	c := sockCount{clientTW: map[sockKey]time.Duration{}, serverTW: map[sockKey]time.Duration{}}
	if established {
		c.established = map[sockKey]bool{}
	}
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			if os.IsNotExist(err) && f != "/proc/self/net/tcp" {
				continue
			}
			return c, err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Scan() // header
		for sc.Scan() {
			// "  0: 0100007F:9C40 0100007F:1F90 06 00000000:00000000 03:00001751 ..."
			// For a TIME_WAIT socket the timer field (type 3) holds the
			// time it has left, in USER_HZ (100 Hz) ticks.
			f := bytes.Fields(sc.Bytes())
			if len(f) < 6 {
				continue
			}
			lp, rp := hexPort(f[1]), hexPort(f[2])
			st, _ := strconv.ParseUint(string(f[3]), 16, 8)
			k := sockKey{lp, rp}
			switch {
			case rp == serverPort && st == tcpTimeWait:
				c.clientTW[k] = timeLeft(f[5])
			case lp == serverPort && st == tcpTimeWait:
				c.serverTW[k] = timeLeft(f[5])
			case rp == serverPort && st == tcpEstablished:
				c.open++
			}
			if established && st == tcpEstablished && lp == serverPort {
				c.established[k] = true
			}
			if (rp == serverPort || lp == serverPort) && closingStates[st] {
				c.closing++
			}
		}
	}
	return c, nil
}

// timeLeft reads a timer field of /proc/net/tcp, "03:00001751": the
// ticks left, at 100 a second.
func timeLeft(timer []byte) time.Duration {
	i := bytes.IndexByte(timer, ':')
	n, err := strconv.ParseUint(string(timer[i+1:]), 16, 32)
	if err != nil {
		return 0
	}
	return time.Duration(n) * 10 * time.Millisecond
}

func hexPort(addr []byte) int {
	i := bytes.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.ParseUint(string(addr[i+1:]), 16, 16)
	if err != nil {
		return -1
	}
	return int(p)
}

// A Sampler watches the sockets to the server port while a run lasts: the
// peaks of TIME_WAIT (each side) and of open connections, and a time_wait
// event for every socket that enters TIME_WAIT (time_wait_end when one
// leaves it), to within the sampling interval. A client socket that
// connect() took over (tcp_tw_reuse) ends with the reason "reused": it left
// well before its time, or a new one on the same ports, closed since, has
// a later one. The kernel takes over only sockets older than
// tcp_tw_reuse_delay (1 s), so every one of them was seen first.
type Sampler struct {
	port  int
	every time.Duration
	emit  func(*sim.Event)
	since func(time.Time) time.Duration

	mu                      sync.Mutex
	twPeak, stwPeak, openPk int
	last                    sockCount
	// after: the server's sockets still established when the load ended;
	// their TIME_WAIT (the server closed after the run) is not counted.
	after map[sockKey]bool
	due   map[sockKey]span // client TIME_WAIT sockets: when each expires
	gone  map[sockKey]span // missing well before their time: taken over, unless the next reading shows them
	err   error
	stop  chan struct{}
	done  chan struct{}
}

// takeoverGap is how far from its time a TIME_WAIT socket's end (or its
// successor's) must be to count as taken over: the kernel's timers never
// fire early, and a takeover comes at least tcp_tw_reuse_delay (1 s) after
// the socket entered TIME_WAIT.
const takeoverGap = 250 * time.Millisecond

// A span is when a TIME_WAIT socket expires, as one reading can tell: a
// line of /proc/net/tcp was written between the start and the end of the
// reading (which can take long on a busy machine), and its time left is
// cut to 10 ms ticks.
type span struct{ lo, hi time.Time }

func dueSpan(start, end time.Time, left time.Duration) span {
	return span{start.Add(left), end.Add(left + 20*time.Millisecond)}
}

// StartSampler samples the sockets of port every interval from the run's
// time 0 (since gives the run time of an instant) and emits their events.
func StartSampler(port int, every time.Duration, since func(time.Time) time.Duration, emit func(*sim.Event)) *Sampler {
	s := &Sampler{port: port, every: every, emit: emit, since: since, stop: make(chan struct{}), done: make(chan struct{}),
		last: sockCount{serverTW: map[sockKey]time.Duration{}}, due: map[sockKey]span{}, gone: map[sockKey]span{}}
	go func() {
		defer close(s.done)
		if early := -since(time.Now()); early > 0 {
			time.Sleep(early) // the run starts at its time 0
		}
		for {
			// /proc/net/tcp costs the kernel time in proportion to the
			// sockets it lists (thousands in TIME_WAIT): keep the sampler
			// under about 5 % of a core.
			start := time.Now()
			s.sample()
			wait := max(every, 20*time.Since(start))
			select {
			case <-s.stop:
				return
			case <-time.After(wait):
			}
		}
	}()
	return s
}

func (s *Sampler) sample() {
	start := time.Now()
	c, err := readSockets(s.port, false)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		return
	}
	at := s.since(now)
	emit := func(k sim.Kind, by sim.Side, port int, reason sim.CloseReason) {
		s.emit(&sim.Event{Kind: k, At: at, By: by, LocalPort: port, Reason: reason})
	}
	// Client side, by the time each socket has left.
	later := func(a, b span) bool { return a.lo.Sub(b.hi) > takeoverGap } // a expires well after b
	for k, was := range s.gone {
		delete(s.gone, k)
		if left, ok := c.clientTW[k]; ok && !later(dueSpan(start, now, left), was) {
			s.due[k] = was // the last reading missed it: /proc/net/tcp is no snapshot
			continue
		}
		emit(sim.KindTimeWaitEnd, sim.SideClient, k.local, sim.ReasonReused)
	}
	for k, left := range c.clientTW {
		due := dueSpan(start, now, left)
		was, seen := s.due[k]
		switch {
		case !seen:
			emit(sim.KindTimeWait, sim.SideClient, k.local, "")
		case later(due, was):
			emit(sim.KindTimeWaitEnd, sim.SideClient, k.local, sim.ReasonReused)
			emit(sim.KindTimeWait, sim.SideClient, k.local, "")
		}
		s.due[k] = due
	}
	for k, was := range s.due {
		if _, ok := c.clientTW[k]; ok {
			continue
		}
		delete(s.due, k)
		if was.lo.Sub(now) > takeoverGap {
			s.gone[k] = was
		} else {
			emit(sim.KindTimeWaitEnd, sim.SideClient, k.local, "")
		}
	}
	// Server side.
	for k := range c.serverTW {
		if _, ok := s.last.serverTW[k]; !ok {
			emit(sim.KindTimeWait, sim.SideServer, 0, "")
		}
	}
	for k := range s.last.serverTW {
		if _, ok := c.serverTW[k]; !ok {
			emit(sim.KindTimeWaitEnd, sim.SideServer, 0, "")
		}
	}
	s.last = c
	s.twPeak = max(s.twPeak, len(c.clientTW))
	s.stwPeak = max(s.stwPeak, s.counted(c.serverTW))
	s.openPk = max(s.openPk, c.open)
}

// counted is how many of the server's TIME_WAIT sockets tw count in its
// peak: those of closes the server began before the load ended.
func (s *Sampler) counted(tw map[sockKey]time.Duration) int {
	n := len(tw)
	if s.after != nil {
		for k := range tw {
			if s.after[k] {
				n--
			}
		}
	}
	return n
}

// Finish waits grace, then up to settle for closes in progress to complete
// (a FIN crosses the emulated path in half a round trip; the model counts
// the TIME_WAIT at once), takes a last sample and stops. It returns the
// peaks of client and server TIME_WAIT and of open connections. The peaks
// are of the run, as the model's are (it stops at the last answer): a
// server's socket still established when Finish is called and closed by the
// server in the meantime (its keep-alive timer firing) leaves a TIME_WAIT
// that is not counted. A client's close at the end is not told apart: a
// worker closes its connections as its last request ends, which the model
// puts before the last answer and a real worker a little after.
func (s *Sampler) Finish(grace, settle time.Duration) (tw, stw, open int, err error) {
	close(s.stop)
	<-s.done
	if c, err := readSockets(s.port, true); err == nil {
		s.mu.Lock()
		s.after = c.established
		s.mu.Unlock()
	}
	time.Sleep(grace) // a close made at a client's end of the path leaves half a round trip later
	for end := time.Now().Add(settle); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if c, err := readSockets(s.port, false); err != nil || c.closing == 0 {
			break
		}
	}
	s.sample()
	s.mu.Lock()
	missing := len(s.gone) > 0
	s.mu.Unlock()
	if missing {
		// Taken over, or missed by the last reading: one more tells.
		time.Sleep(s.every)
		s.sample()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.twPeak, s.stwPeak, s.openPk, s.err
}
