package netem

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// spinWindow is the part of a precise wait that spins instead of sleeping:
// a timer on a VM can fire late (the vCPU has to be woken up), so the sleep
// ends this much before the target and a spin covers the rest.
const spinWindow = 200 * time.Microsecond

// preciseWait waits until t. The sleep is a timerfd read through Go's
// netpoller, so the goroutine parks and its P serves other goroutines while
// it sleeps; then a spin of at most spinWindow. A nanosleep in the
// goroutine instead would hold its P in a system call: with two Ps, two
// goroutines waiting that way leave none for the rest (the emulated path's
// other connections, the client itself) until sysmon takes one back, which
// after a quiet spell is up to 10 ms later.
//
// The spin yields (runtime.Gosched) until the last hardSpin: when several
// connections fall due together (eight users in step), spinners that held
// both Ps kept the others, and the netpoller, from running until they were
// done, and the last one was served late.
func preciseWait(t time.Time) {
	if d := time.Until(t); d > spinWindow {
		timerSleep(d - spinWindow)
	}
	for {
		r := time.Until(t)
		if r <= 0 {
			return
		}
		if r > hardSpin {
			runtime.Gosched()
		}
	}
}

// hardSpin is the end of a precise wait that spins without yielding.
const hardSpin = 25 * time.Microsecond

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
// the scheduler fires on time when the process is busy. Busy with other
// waits' spins, the scheduler runs runnable goroutines before it polls the
// network, for up to 10 ms: a burst of waits falling due together (25 new
// connections at once) then woke all at its end, the last first.
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
