package netem

import (
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// preciseWait waits until t on a timerfd read through Go's netpoller, so
// the goroutine parks and its P serves other goroutines while it sleeps; a
// nanosleep instead would hold its P in a system call, and with two Ps two
// such waits leave none for the rest until sysmon takes one back, up to
// 10 ms later.
//
// It does not spin. Spinners that yield (runtime.Gosched) keep the run
// queue from ever being empty, and Go's scheduler polls the network only
// when it is: in a burst (25 new connections at once) their windows
// overlapped, and socket reads and connects waited for sysmon's poll, up to
// 10 ms later. Spinners that do not yield hold the Ps the burst's own work
// needs. Instead the timer is armed early by how late wake-ups have come
// lately (wakeLead); what a wake-up still adds is part of the harness
// overhead that Tare measures.
func preciseWait(t time.Time) {
	lead := wakeLead.get()
	if d := time.Until(t) - lead; d > 0 {
		armed := time.Now().Add(d)
		timerSleep(d)
		wakeLead.add(time.Since(armed))
	}
}

// wakeLead learns how late a thread that sleeps on a timer wakes up on this
// machine. It happens twice in every emulated round trip (the bytes'
// arrival, then their departure), and on a small VM the two took most of
// the accuracy the path promises (TestPathRTT). A wait arms its timer early:
// the 10th percentile of the last wake-ups' lateness, so that about one
// wait in ten wakes up a little before its time (and returns then: it does
// not spin) and the others a little after. It is capped at maxLead.
var wakeLead lateness

const (
	maxLead     = 150 * time.Microsecond
	leadSamples = 32
)

type lateness struct {
	lead atomic.Int64 // nanoseconds; read by every wait without the lock

	mu   sync.Mutex
	ring [leadSamples]time.Duration
	n    int // samples taken, up to the ring's size
	next int
}

func (l *lateness) get() time.Duration { return time.Duration(l.lead.Load()) }

func (l *lateness) add(late time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.next] = max(late, 0)
	l.next = (l.next + 1) % leadSamples
	l.n = min(l.n+1, leadSamples)
	if l.n < leadSamples/4 {
		return
	}
	s := l.ring // a copy on the stack: no allocation on this hot path
	slices.Sort(s[:l.n])
	l.lead.Store(int64(min(s[l.n/10], maxLead)))
}

// A timerFD is a CLOCK_MONOTONIC timerfd read through the netpoller.
type timerFD struct {
	fd int
	f  *os.File
}

// timerFDs keeps idle timerfds for reuse, one per concurrent wait at most.
var timerFDs struct {
	mu   sync.Mutex
	free []*timerFD
	err  error // timerfd_create failed once: fall back to nanosleep
}

const maxIdleTimerFDs = 64

func getTimerFD() *timerFD {
	timerFDs.mu.Lock()
	if n := len(timerFDs.free); n > 0 {
		t := timerFDs.free[n-1]
		timerFDs.free = timerFDs.free[:n-1]
		timerFDs.mu.Unlock()
		return t
	}
	if timerFDs.err != nil {
		timerFDs.mu.Unlock()
		return nil
	}
	timerFDs.mu.Unlock()
	const tfdNonblock, tfdCloexec = syscall.O_NONBLOCK, syscall.O_CLOEXEC
	fd, _, e := syscall.RawSyscall(syscall.SYS_TIMERFD_CREATE, 1 /* CLOCK_MONOTONIC */, tfdNonblock|tfdCloexec, 0)
	if e != 0 {
		timerFDs.mu.Lock()
		timerFDs.err = e
		timerFDs.mu.Unlock()
		return nil
	}
	return &timerFD{fd: int(fd), f: os.NewFile(fd, "timerfd")}
}

func putTimerFD(t *timerFD) {
	timerFDs.mu.Lock()
	defer timerFDs.mu.Unlock()
	if len(timerFDs.free) >= maxIdleTimerFDs {
		t.f.Close()
		return
	}
	timerFDs.free = append(timerFDs.free, t)
}

type itimerspec struct {
	interval syscall.Timespec
	value    syscall.Timespec
}

// timerSleep sleeps about d (d > 0) without holding a P.
//
// Two clocks end the sleep, whichever comes first: the timerfd, which the
// netpoller hears at once when the process is idle (Go's own timers then
// wake up to a millisecond late), and the read's deadline, a Go timer, which
// the scheduler fires on time when the process is busy: busy, the
// scheduler runs runnable goroutines before it polls the network, for up to
// 10 ms.
func timerSleep(d time.Duration) {
	t := getTimerFD()
	if t != nil {
		spec := itimerspec{value: syscall.NsecToTimespec(int64(max(d, time.Microsecond)))}
		// Setting the timer also clears an expiry a deadline beat last time.
		_, _, e := syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, uintptr(t.fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
		if e == 0 && t.f.SetReadDeadline(time.Now().Add(d)) == nil {
			var buf [8]byte
			_, err := t.f.Read(buf[:]) // parks until the timer expires or the deadline passes
			if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				putTimerFD(t)
				return
			}
		}
		t.f.Close()
	}
	// No timerfd: a nanosleep with 1 ns of timer slack (holds the P).
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Nanosleep(&ts, nil)
}

const prSetTimerslack = 29 // PR_SET_TIMERSLACK, linux/prctl.h
