package netem

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestDialBusy: a dial completes while the process's goroutines keep its
// only P busy. A connect that waits for the network poller (Go's own
// dialer) is noticed only when the run queue empties or sysmon polls, up
// to 10 ms later, once per dial; Dial's connect returns from the kernel.
func TestDialBusy(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln := closingListener(t)
	stop := busy()
	defer stop()
	const dials = 20
	// Waiting for sysmon, 20 dials take about 200 ms; connecting from the
	// kernel, a few milliseconds. Other programs that keep the machine
	// busy can take the process's thread from it too: a slow round decides
	// only on a quiet machine (decide).
	decide(t, 1, 3, func() string {
		start := time.Now()
		for range dials {
			c, err := Dial(context.Background(), "tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := c.(*net.TCPConn); !ok {
				t.Fatalf("Dial returned a %T, not a *net.TCPConn", c)
			}
			c.Close()
		}
		if took := time.Since(start); took > 60*time.Millisecond {
			return fmt.Sprintf("%d dials took %v with the process busy: each waited for the network poller", dials, took)
		}
		return ""
	})
}

// closingListener listens on loopback and closes every connection it
// accepts, until the test ends.
func closingListener(t *testing.T) net.Listener {
	ln, err := Listen("tcp", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln
}

// busy keeps this process's Ps busy with two goroutines that are always
// runnable (each yields to the other), so the scheduler never polls the
// network itself, until the returned function is called.
func busy() (stop func()) {
	var done atomic.Bool
	for range 2 {
		go func() {
			for !done.Load() {
				for t := time.Now(); time.Since(t) < 20*time.Microsecond; {
				}
				runtime.Gosched()
			}
		}()
	}
	return func() { done.Store(true) }
}

// TestDialFails: Dial's own connect reports a refused connection at once,
// and a connect that gets no answer (a listener whose accept queue is
// full drops the SYN) when the context's deadline passes.
func TestDialFails(t *testing.T) {
	ln, err := Listen("tcp", "")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	start := time.Now()
	if _, err := Dial(context.Background(), "tcp", closed); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Dial to a closed port: %v, want connection refused", err)
	} else if took := time.Since(start); took > time.Second {
		t.Errorf("a refused Dial took %v", took)
	}

	addr := fullListener(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = Dial(ctx, "tcp", addr)
	checkCallersDeadline(t, "Dial to a full queue", err)
}

// checkCallersDeadline: err is the one of a connect that got no answer
// before the caller's deadline (up to 100 ms), not maxConnectWait.
func checkCallersDeadline(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) ||
		!regexp.MustCompile(`within the caller's deadline \(([0-9]{1,3}ms|0s) after`).MatchString(err.Error()) {
		t.Errorf("%s: %v, want no answer within the caller's deadline of up to 100ms", what, err)
	}
}

// fullListener listens on loopback with the shortest accept queue, accepts
// nothing, and fills the queue: a connect to its address gets no answer
// (the kernel drops the SYN). Its queued connections close with the test.
func fullListener(t *testing.T) string {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		c, err := Dial(ctx, "tcp", addr)
		cancel()
		if err != nil {
			checkCallersDeadline(t, "filling the queue", err)
			return addr
		}
		t.Cleanup(func() { c.Close() }) // queued: the queue had room yet
		if i == 8 {
			t.Fatalf("%d connects to a listener that accepts nothing all succeeded", i+1)
		}
	}
}

// TestDialDeadlineEitherOrder: a connect whose caller's deadline passes
// names that deadline whether the context says so first (its timer fired)
// or the wait runs out first (the timer is late on a busy machine).
func TestDialDeadlineEitherOrder(t *testing.T) {
	addr := fullListener(t)
	past := time.Now().Add(-time.Millisecond)
	expired, cancel := context.WithDeadline(context.Background(), past)
	defer cancel()
	_, err := Dial(expired, "tcp", addr)
	checkCallersDeadline(t, "the context done first", err)
	_, err = Dial(lateTimer{context.Background(), past}, "tcp", addr)
	checkCallersDeadline(t, "the wait's end first", err)
}

// lateTimer is a context whose deadline has passed but whose timer has not
// yet fired: Err is still nil.
type lateTimer struct {
	context.Context
	deadline time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.deadline, true }
