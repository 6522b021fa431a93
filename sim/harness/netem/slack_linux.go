package netem

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// TightenTimerSlack sets the timer slack of every thread of this process
// to 1 ns, and so of every thread and child process they start (both
// inherit it), and returns the largest slack it found.
//
// A thread's timer slack is how late the kernel may end its timed waits
// (epoll_wait, poll, nanosleep, not a timerfd) to batch wake-ups: 50 µs by
// default, but an environment may set more, and every process inherits it.
// Go's timers wait in epoll_wait, and so do the first part of SleepUntil's
// long waits, libuv's (node) and nginx's. On an idle machine nothing else
// ends such a wait early: with a slack of tens of milliseconds, a burst of
// new connections' gated first writes all left nearly that late.
//
// Setting another thread's slack needs CAP_SYS_NICE, which root has and so
// has a lab process that runs as root of its own user namespace. Whatever
// slack is left lengthens the precise stretch of SleepUntil's waits.
func TightenTimerSlack() (found time.Duration, err error) {
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
	// Threads started meanwhile copy their creator's slack: a few passes
	// until none is left to change.
	var left time.Duration
	for range 5 {
		changed := 0
		left = 0
		tids, rerr := os.ReadDir("/proc/self/task")
		if rerr != nil {
			return found, fmt.Errorf("timer slack: %w", rerr)
		}
		for _, tid := range tids {
			p := "/proc/" + tid.Name() + "/timerslack_ns"
			ns, rerr := readSlack(p)
			if rerr != nil {
				continue // the thread has exited
			}
			found = max(found, ns)
			if ns == 1 {
				continue
			}
			if werr := os.WriteFile(p, []byte("1"), 0); werr != nil {
				if err == nil {
					err = fmt.Errorf("thread %s keeps %v: %w", tid.Name(), ns, werr)
				}
				left = max(left, ns)
				continue
			}
			changed++
		}
		if changed == 0 {
			break
		}
	}
	setCoarseMargin(left)
	return found, err
}

func readSlack(p string) (time.Duration, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return time.Duration(n), err
}
