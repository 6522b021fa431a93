package netem

import (
	"net"
	"syscall"
)

// CorkForClose sets TCP_CORK on the TCP socket under c, so that what is
// written next (a TLS close_notify) stays in the kernel until the socket
// is shut down or closed and then leaves with the FIN, as it does when a C
// client (curl, nginx) writes the alert and closes in two calls in a row.
// A Go client can stall between the two on a busy machine, and the server
// then closes first on the alert alone. It reports whether it was set.
func CorkForClose(c net.Conn) bool {
	if nc, ok := c.(*Conn); ok {
		c = nc.raw
	}
	tc := tcpConn(c)
	if tc == nil {
		return false
	}
	_, ok := setsockoptInt(tc, syscall.IPPROTO_TCP, syscall.TCP_CORK, 1)
	return ok
}
