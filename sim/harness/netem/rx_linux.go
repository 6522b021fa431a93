package netem

import (
	"net"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// stampedReader reads a TCP socket and tells when the kernel received the
// bytes (SO_TIMESTAMPNS), so the emulated delay starts at the arrival, not
// when this goroutine got to run, which on a busy machine is later.
type stampedReader struct {
	rc  syscall.RawConn
	oob []byte
}

// keepStamping holds one socket with receive timestamps open for the life
// of the process. The kernel turns timestamping on for the whole machine
// when the first socket asks for it and off when the last one closes, and
// each switch patches kernel code and stops every CPU for a moment: with
// connections opened and closed all the time that would stall the very
// timing being measured.
var keepStamping sync.Once

func holdTimestamps() {
	keepStamping.Do(func() {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
		if err == nil {
			syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1) // never closed
		}
	})
}

func newStampedReader(c net.Conn) *stampedReader {
	tc := tcpConn(c)
	if tc == nil {
		return nil
	}
	rc, ok := stamp(tc)
	if !ok {
		return nil
	}
	return &stampedReader{rc: rc, oob: make([]byte, 128)}
}

// stamp asks the kernel to stamp what c receives.
func stamp(c syscall.Conn) (syscall.RawConn, bool) {
	holdTimestamps()
	return setsockoptInt(c, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
}

// setsockoptInt sets an integer option on c's socket and returns its raw
// connection; false if it could not.
func setsockoptInt(c syscall.Conn, level, opt, v int) (syscall.RawConn, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), level, opt, v)
	}); err != nil || serr != nil {
		return nil, false
	}
	return rc, true
}

// read returns the bytes read, when they arrived (now, if the kernel gave
// no time) and when this read returned.
func (s *stampedReader) read(buf []byte) (int, time.Time, time.Time, error) {
	var n, oobn int
	var rerr error
	err := s.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), buf, s.oob, 0)
		return rerr != syscall.EAGAIN
	})
	now := time.Now()
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, now, now, err
	}
	if n == 0 {
		return 0, now, now, errEOF
	}
	return n, RxTime(s.oob[:oobn], now), now, nil
}

// EnableRxTimestamps asks the kernel to stamp received datagrams.
func EnableRxTimestamps(c *net.UDPConn) bool {
	_, ok := stamp(c)
	return ok
}

// RxTime returns the kernel's receive time from a message's control data,
// on the monotonic clock, or now.
func RxTime(oob []byte, now time.Time) time.Time {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return now
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
			if k := time.Unix(ts.Sec, ts.Nsec); k.Before(now) && now.Sub(k) < time.Second {
				return now.Add(-now.Sub(k))
			}
		}
	}
	return now
}
