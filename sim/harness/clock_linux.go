package harness

import (
	"syscall"
	"time"
)

// spinWindow is the part of a precise wait that spins instead of sleeping:
// a nanosleep on a VM overshoots by 30–80 µs even with 1 ns of timer slack.
const spinWindow = 120 * time.Microsecond

const prSetTimerslack = 29 // PR_SET_TIMERSLACK, linux/prctl.h

// preciseWait waits the last few milliseconds before t with nanosleep at 1
// ns of timer slack, then spins. It does not lock the goroutine to its
// thread: a locked goroutine whose P was handed away during the syscall
// waits for that very thread to be given one back, which on a busy process
// costs milliseconds. (If the goroutine moves between the prctl and the
// nanosleep, the sleep gets the default 50 µs of slack.)
func preciseWait(t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	if d > spinWindow {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
		for d = time.Until(t); d > spinWindow; d = time.Until(t) {
			ts := syscall.NsecToTimespec(int64(d - spinWindow))
			syscall.Nanosleep(&ts, nil) // EINTR: loop again
		}
	}
	for time.Until(t) > 0 {
	}
}
