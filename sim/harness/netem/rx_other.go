//go:build !linux

package harness

import (
	"net"
	"time"
)

type stampedReader struct{}

func newStampedReader(net.Conn) *stampedReader { return nil }

func (s *stampedReader) read(buf []byte) (int, time.Time, error) { return 0, time.Time{}, errEOF }

func enableRxTimestamps(*net.UDPConn) bool { return false }

func rxTime(_ []byte, now time.Time) time.Time { return now }
