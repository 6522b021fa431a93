//go:build !linux

package netem

import (
	"net"
	"time"
)

type stampedReader struct{}

func newStampedReader(net.Conn) *stampedReader { return nil }

func (s *stampedReader) read(buf []byte) (int, time.Time, time.Time, error) {
	return 0, time.Time{}, time.Time{}, errEOF
}

func EnableRxTimestamps(*net.UDPConn) bool { return false }

func RxTime(_ []byte, now time.Time) time.Time { return now }
