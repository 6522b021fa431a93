package harness

import (
	"runtime"
	"syscall"
	"time"
)

// spinWindow is the part of a precise wait that spins instead of sleeping:
// a nanosleep on a VM overshoots by 30–80 µs even with 1 ns of timer slack.
const spinWindow = 80 * time.Microsecond

const prSetTimerslack = 29 // PR_SET_TIMERSLACK, linux/prctl.h

// preciseWait waits the last few milliseconds before t on a locked OS thread
// with 1 ns of timer slack, then spins.
func preciseWait(t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	if d > spinWindow {
		runtime.LockOSThread()
		syscall.Syscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
		for d = time.Until(t); d > spinWindow; d = time.Until(t) {
			ts := syscall.NsecToTimespec(int64(d - spinWindow))
			syscall.Nanosleep(&ts, nil) // EINTR: loop again
		}
		runtime.UnlockOSThread()
	}
	for time.Until(t) > 0 {
	}
}
