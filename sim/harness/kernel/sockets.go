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
// server port.
type sockCount struct {
	clientTW map[sockKey]bool // TIME_WAIT on the client side (remote port = server)
	serverTW map[sockKey]bool // TIME_WAIT on the server side (local port = server)
	open     int              // established, client side
	closing  int              // either side half way through a close
}

// readSockets reads /proc/net/tcp and tcp6 of this process's network
// namespace and keeps the sockets to or from the server port.
func readSockets(serverPort int) (sockCount, error) {
	c := sockCount{clientTW: map[sockKey]bool{}, serverTW: map[sockKey]bool{}}
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
			// "  0: 0100007F:9C40 0100007F:1F90 06 ..."
			f := bytes.Fields(sc.Bytes())
			if len(f) < 4 {
				continue
			}
			lp, rp := hexPort(f[1]), hexPort(f[2])
			st, _ := strconv.ParseUint(string(f[3]), 16, 8)
			k := sockKey{lp, rp}
			switch {
			case rp == serverPort && st == tcpTimeWait:
				c.clientTW[k] = true
			case lp == serverPort && st == tcpTimeWait:
				c.serverTW[k] = true
			case rp == serverPort && st == tcpEstablished:
				c.open++
			}
			if (rp == serverPort || lp == serverPort) && closingStates[st] {
				c.closing++
			}
		}
	}
	return c, nil
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
// leaves it), to within the sampling interval.
type Sampler struct {
	port  int
	every time.Duration
	emit  func(*sim.Event)
	since func(time.Time) time.Duration

	mu                      sync.Mutex
	twPeak, stwPeak, openPk int
	last                    sockCount
	err                     error
	stop                    chan struct{}
	done                    chan struct{}
}

// StartSampler samples the sockets of port every interval from the run's
// time 0 (since gives the run time of an instant) and emits their events.
func StartSampler(port int, every time.Duration, since func(time.Time) time.Duration, emit func(*sim.Event)) *Sampler {
	s := &Sampler{port: port, every: every, emit: emit, since: since, stop: make(chan struct{}), done: make(chan struct{}),
		last: sockCount{clientTW: map[sockKey]bool{}, serverTW: map[sockKey]bool{}}}
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
	c, err := readSockets(s.port)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		return
	}
	at := s.since(now)
	// diff emits an event of kind for every socket in cur and not in prev.
	diff := func(cur, prev map[sockKey]bool, kind sim.Kind, by string) {
		for k := range cur {
			if !prev[k] {
				e := &sim.Event{Kind: kind, At: at, By: by}
				if by == "client" {
					e.LocalPort = k.local
				}
				s.emit(e)
			}
		}
	}
	diff(c.clientTW, s.last.clientTW, sim.KindTimeWait, "client")
	diff(s.last.clientTW, c.clientTW, sim.KindTimeWaitEnd, "client")
	diff(c.serverTW, s.last.serverTW, sim.KindTimeWait, "server")
	diff(s.last.serverTW, c.serverTW, sim.KindTimeWaitEnd, "server")
	s.last = c
	s.twPeak = max(s.twPeak, len(c.clientTW))
	s.stwPeak = max(s.stwPeak, len(c.serverTW))
	s.openPk = max(s.openPk, c.open)
}

// Finish waits grace, then up to settle for closes in progress to complete
// (a FIN crosses the emulated path in half a round trip; the model counts
// the TIME_WAIT at once), takes a last sample and stops. It returns the
// peaks of client and server TIME_WAIT and of open connections.
func (s *Sampler) Finish(grace, settle time.Duration) (tw, stw, open int, err error) {
	close(s.stop)
	<-s.done
	time.Sleep(grace) // a close made at a client's end of the path leaves half a round trip later
	for end := time.Now().Add(settle); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if c, err := readSockets(s.port); err != nil || c.closing == 0 {
			break
		}
	}
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.twPeak, s.stwPeak, s.openPk, s.err
}
