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
	// Waiting for sysmon, 20 dials take about 200 ms.
	if took := time.Since(start); took > 60*time.Millisecond {
		t.Errorf("%d dials took %v with the process busy: each waited for the network poller", dials, took)
	}
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

	// A listener that accepts nothing, with the shortest queue.
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
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
		if err == nil {
			defer c.Close() // queued: the queue has room yet
			if i == 8 {
				t.Fatalf("%d connects to a listener that accepts nothing all succeeded", i+1)
			}
			continue
		}
		// The limit named is the context's (up to 100 ms), not maxConnectWait.
		if !errors.Is(err, os.ErrDeadlineExceeded) || !regexp.MustCompile(`within [0-9]{1,3}ms`).MatchString(err.Error()) {
			t.Errorf("Dial to a full queue: %v, want no answer within the context's 100ms", err)
		}
		break
	}
}
