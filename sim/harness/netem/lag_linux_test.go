package netem

import (
	"context"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestLag: bytes that arrive while the process's only P is held by a busy
// goroutine are read late, past their due time, and Lag says by how much;
// TakeLag starts anew.
func TestLag(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	c, peer := wrappedPair(t, Path{In: time.Millisecond})
	time.Sleep(20 * time.Millisecond) // the read loop waits for bytes
	TakeLag()
	// The peer writes with a raw system call, which keeps the P: with
	// peer.Write, a write slowed by a busy machine lets the scheduler hand
	// the P to the read loop, which then reads the bytes on time.
	rawWrite(t, peer, []byte("x"))
	// Hold the one P for 30 ms: the read loop runs when the scheduler
	// preempts this goroutine or its monitor polls the network.
	for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); {
	}
	b := make([]byte, 1)
	if _, err := c.Read(b); err != nil {
		t.Fatal(err)
	}
	l := TakeLag()
	if l.Max < 5*time.Millisecond || l.Late < 1 {
		t.Errorf("lag %+v after holding the only P for 30 ms, want over 5 ms and a late read", l)
	}
	if l := TakeLag(); l != (Lag{}) {
		t.Errorf("lag %+v after TakeLag, want none", l)
	}
}

// rawWrite writes b to conn's socket with a raw system call, which does not
// give up the goroutine's P.
func rawWrite(t *testing.T, conn net.Conn, b []byte) {
	t.Helper()
	rc, err := tcpConn(conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var errno syscall.Errno
	if err := rc.Write(func(fd uintptr) bool {
		_, _, errno = syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		return true
	}); err != nil || errno != 0 {
		t.Fatalf("write: %v %v", err, errno)
	}
}

// TestDeliveryLag: bytes read on time but due later (the inbound delay)
// go to a Read that waits for them; when that Read wakes late, past their
// due time, Lag counts it, and by no more than it woke late. A busy machine
// can hold this goroutine past the bytes' due time before it takes the P,
// and the Read then wakes on time: such an attempt shows nothing and is
// tried again.
//
// How late the Read wakes is the runtime's to say: it runs when the
// scheduler preempts the goroutine that holds the P, which sysmon does
// once it has seen that goroutine run for 10 ms (forcePreemptNS), that is
// 10 ms or more after it was last scheduled, after the bytes arrived. Due
// 5 ms after they arrived, the Read wakes at least 5 ms late: 9 to 26 ms
// in 150 runs on a quiet machine (a bound of 10 ms failed now and then
// there too), and from 5.9 ms with two busy loops beside the test.
func TestDeliveryLag(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for attempt := 1; ; attempt++ {
		l, woke, held := deliveryLag(t)
		if !held && attempt < 5 {
			t.Logf("attempt %d: the P was taken after the bytes were due", attempt)
			continue
		}
		if !held {
			t.Skip("the machine is too busy: five attempts took the P after the bytes were due")
		}
		t.Logf("attempt %d: lag %+v; the Read returned %v after the bytes' due time", attempt, l, woke)
		if l.Max < 4*time.Millisecond || l.Late < 1 || l.Max > woke {
			t.Errorf("lag %+v after holding the only P for 30 ms past the bytes' due time; the Read returned %v after it, want a late read over 4 ms, at most that", l, woke)
		}
		return
	}
}

// deliveryLag is one attempt of TestDeliveryLag: the lag counted, how long
// after the bytes' due time the Read returned, and whether the P was held
// from before the bytes were due.
func deliveryLag(t *testing.T) (Lag, time.Duration, bool) {
	conn, peer := wrappedPair(t, Path{In: 5 * time.Millisecond})
	c := conn.(*Conn)
	read := make(chan error, 1)
	var returned time.Time
	go func() {
		_, err := c.Read(make([]byte, 1))
		returned = time.Now()
		read <- err
	}()
	time.Sleep(20 * time.Millisecond) // the Read waits for bytes
	TakeLag()
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	// The read loop takes them, due 5 ms after they arrived.
	var due time.Time
	for due.IsZero() {
		// A sleep, not runtime.Gosched: the P must go idle for the
		// scheduler to poll the network and run the read loop.
		time.Sleep(50 * time.Microsecond)
		c.mu.Lock()
		if len(c.in) > 0 {
			due = c.in[0].at
		}
		c.mu.Unlock()
	}
	held := time.Now().Before(due)
	// Hold the one P for 30 ms, past their due time.
	for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); {
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	return TakeLag(), returned.Sub(due), held
}

// wrappedPair connects two loopback sockets and returns one wrapped in p
// and its peer; both are closed when t ends.
func wrappedPair(t *testing.T, p Path) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := Listen("tcp", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	c := p.Wrap(raw)
	t.Cleanup(func() { c.Close(); raw.Close(); peer.Close() })
	return c, peer
}

// TestWriteLag: bytes held until a due time are written late when their
// writer runs late, and Lag says by how much: a gated first write made
// after the connect's round trip had passed, and an outbound path's
// write loop that the only P's busy goroutine holds up.
func TestWriteLag(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln := closingListener(t)
	TakeLag()
	g, _, err := Dialer{RTT: time.Millisecond}.DialGated(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	time.Sleep(10 * time.Millisecond) // the request is written 9 ms after the gate opened
	if _, err := g.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if l := TakeLag(); l.WriteMax < 5*time.Millisecond || l.LateWrites != 1 || l.Max != 0 {
		t.Errorf("lag %+v after a gated write 9 ms late, want a late write over 5 ms and no late read", l)
	}

	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := Path{Out: time.Millisecond}.Wrap(raw)
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	// Hold the one P for 30 ms: the write loop runs when the scheduler
	// preempts this goroutine.
	for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); {
	}
	time.Sleep(5 * time.Millisecond) // the write loop writes
	if l := TakeLag(); l.WriteMax < 5*time.Millisecond || l.LateWrites < 1 {
		t.Errorf("lag %+v after holding the only P for 30 ms, want a write over 5 ms late", l)
	}
	if l := TakeLag(); l != (Lag{}) {
		t.Errorf("lag %+v after TakeLag, want none", l)
	}
}
