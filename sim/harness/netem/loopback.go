package netem

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/connlab/connlab/sim/loopback"
)

// CheckLoopback returns an error unless addr ("host:port" or a bare host) is
// a literal loopback address (loopback.Check). Every listener and dialer of
// the harness goes through it.
func CheckLoopback(addr string) error {
	if err := loopback.Check(addr); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return nil
}

// Dial dials a loopback address only. A TCP connect waits for the
// handshake in the kernel, not in Go's network poller (dialTCP).
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := CheckLoopback(addr); err != nil {
		return nil, err
	}
	switch network {
	case "tcp", "tcp4", "tcp6":
		return dialTCP(ctx, network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// Listen listens on a loopback address only ("": 127.0.0.1 and a port the
// kernel chooses).
func Listen(network, addr string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := CheckLoopback(addr); err != nil {
		return nil, err
	}
	return net.Listen(network, addr)
}

// FreePort asks the kernel for a free loopback port, for a program that
// must be given a number (nginx, redis-server); in a private network
// namespace nothing else takes it before that program does.
func FreePort() (int, error) {
	ln, err := Listen("tcp", "")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Dialer is the harness's dialer for clients it owns: loopback only, and it
// waits one round trip after the kernel's (instant) loopback handshake, so
// the TCP connect costs what it would over the emulated path.
type Dialer struct {
	RTT time.Duration
}

// DialContext dials addr, which must be a loopback address.
func (d Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	start := time.Now()
	c, err := Dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if err := SleepCtx(ctx, start.Add(d.RTT)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// DialGated dials addr at once and returns a connection whose first write
// waits until ready, one RTT after the dial started, when the TCP handshake
// completes over the emulated path. The client may set itself up in the
// meantime (Go's HTTP client hands a new connection through goroutines):
// that setup belongs to this client, not to the network, and the call's
// connect phase ends at ready all the same.
func (d Dialer) DialGated(ctx context.Context, network, addr string) (net.Conn, time.Time, error) {
	start := time.Now()
	c, err := Dial(ctx, network, addr)
	if err != nil {
		return nil, time.Time{}, err
	}
	ready := start.Add(d.RTT)
	return &gateConn{Conn: c, at: ready}, ready, nil
}

// gateConn holds its first write until at.
type gateConn struct {
	net.Conn
	at     time.Time
	passed bool // only the writing goroutine touches it
}

func (g *gateConn) Write(p []byte) (int, error) {
	if !g.passed {
		SleepUntil(g.at)
		noteWriteLag(time.Since(g.at))
		g.passed = true
	}
	return g.Conn.Write(p)
}

// NetConn returns the TCP connection, as tls.Conn's does.
func (g *gateConn) NetConn() net.Conn { return g.Conn }

// CloseReset closes a probe connection with a reset, which leaves no
// TIME_WAIT socket behind.
func CloseReset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
