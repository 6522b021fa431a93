package netem

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// maxConnectWait bounds a connect whose SYN is not answered at once (a
// listener whose accept queue is full drops it, and the kernel sends it
// again a second later).
const maxConnectWait = 3 * time.Second

// dialTCP connects to a loopback address and waits for the handshake in a
// system call (ppoll), not in Go's network poller. The poller is consulted
// only when a process's run queue empties, or by sysmon every 10 ms: while
// the process is busy, a connect is noticed up to 10 ms after the kernel
// completed it (TestDialBusy), and a burst of new connections (25 at once
// behind a busy proxy) leaves that much later, all together. A thread that
// waits in the kernel wakes when the handshake completes, and its goroutine
// runs as soon as it gets a P.
func dialTCP(ctx context.Context, network, addr string) (net.Conn, error) {
	ra, err := net.ResolveTCPAddr(network, addr) // a literal address: no lookup
	if err != nil {
		return nil, err
	}
	var sa syscall.Sockaddr
	family := syscall.AF_INET
	if ip4 := ra.IP.To4(); ip4 != nil {
		sa = &syscall.SockaddrInet4{Port: ra.Port, Addr: [4]byte(ip4)}
	} else {
		family = syscall.AF_INET6
		sa = &syscall.SockaddrInet6{Port: ra.Port, Addr: [16]byte(ra.IP.To16())}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP)
	if err != nil {
		return nil, opError(ra, os.NewSyscallError("socket", err))
	}
	if err := connectWait(ctx, fd, sa); err != nil {
		syscall.Close(fd)
		return nil, opError(ra, err)
	}
	f := os.NewFile(uintptr(fd), "tcp")
	c, err := net.FileConn(f) // a duplicate, non-blocking, in the poller
	f.Close()
	if err != nil {
		return nil, opError(ra, err)
	}
	return c, nil
}

func opError(ra *net.TCPAddr, err error) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: ra, Err: err}
}

// connectWait starts a connect on the non-blocking socket fd and waits in
// ppoll until it is done, ctx ends or maxConnectWait has passed.
func connectWait(ctx context.Context, fd int, sa syscall.Sockaddr) error {
	err := syscall.Connect(fd, sa)
	for err == syscall.EINTR {
		err = syscall.Connect(fd, sa)
	}
	switch err {
	case nil, syscall.EISCONN:
		return nil
	case syscall.EINPROGRESS, syscall.EALREADY:
	default:
		return os.NewSyscallError("connect", err)
	}
	// Whichever runs out first, the caller's deadline or maxConnectWait,
	// the error names it; the check of ctx and the wait's own end may see
	// the caller's deadline pass in either order, and both say the same.
	start := time.Now()
	deadline, callers := start.Add(maxConnectWait), false
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, callers = d, true
	}
	noAnswer := func() error {
		if callers {
			return fmt.Errorf("connect: no answer within the caller's deadline (%v after the connect began): %w (%w)",
				max(deadline.Sub(start), 0).Round(time.Millisecond), os.ErrDeadlineExceeded, context.DeadlineExceeded)
		}
		return fmt.Errorf("connect: no answer within %v (netem's limit for a connect): %w", maxConnectWait, os.ErrDeadlineExceeded)
	}
	for {
		if err := ctx.Err(); err != nil {
			if callers && errors.Is(err, context.DeadlineExceeded) {
				return noAnswer()
			}
			return err
		}
		// At most 50 ms a wait, so that a cancelled ctx ends it soon.
		wait := min(time.Until(deadline), 50*time.Millisecond)
		if wait <= 0 {
			return noAnswer()
		}
		ts := syscall.NsecToTimespec(int64(wait))
		pfd := struct {
			fd             int32
			events, revent int16
		}{fd: int32(fd), events: 0x4} // POLLOUT
		_, _, e := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if e != 0 && e != syscall.EINTR {
			return os.NewSyscallError("ppoll", e)
		}
		if pfd.revent == 0 {
			continue // the wait ended, or a signal came
		}
		soErr, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ERROR)
		if err != nil {
			return os.NewSyscallError("getsockopt", err)
		}
		if soErr != 0 {
			return os.NewSyscallError("connect", syscall.Errno(soErr))
		}
		return nil
	}
}
