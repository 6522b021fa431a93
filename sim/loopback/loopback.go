// Package loopback is connlab's one rule for which addresses it may talk to:
// 127.0.0.0/8 and ::1. The harness dials and listens only where Check
// allows; sim serve binds and answers only where Host allows.
package loopback

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// hostOf returns the host of "host:port", or s itself when it has no port,
// without the brackets of an IPv6 literal.
func hostOf(s string) string {
	host := s
	if h, _, err := net.SplitHostPort(s); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// IsIP reports whether addr ("host:port" or a bare host) is a literal
// loopback address without a zone. Names are not: resolving them could lead
// anywhere.
func IsIP(addr string) bool {
	ip, err := netip.ParseAddr(hostOf(addr))
	return err == nil && ip.Unmap().IsLoopback() && ip.Zone() == ""
}

// Check returns an error unless addr is a literal loopback address (IsIP).
// Every listener and dialer of the harness goes through it.
func Check(addr string) error {
	if !IsIP(addr) {
		return fmt.Errorf("refusing %q: only loopback addresses (127.0.0.0/8, ::1) are allowed", addr)
	}
	return nil
}

// IsHost reports whether a listen address or a Host header names this
// machine's loopback: a literal loopback address, or "localhost".
func IsHost(hostport string) bool {
	return strings.EqualFold(hostOf(hostport), "localhost") || IsIP(hostport)
}
