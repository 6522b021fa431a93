//go:build !linux

package netem

import (
	"context"
	"net"
)

// dialTCP dials with Go's own dialer where the kernel-side wait is not
// written (Linux only).
func dialTCP(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}
