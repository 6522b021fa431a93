//go:build !linux

package netem

import "net"

// CorkForClose is Linux's only (TCP_CORK); elsewhere it does nothing.
func CorkForClose(net.Conn) bool { return false }
