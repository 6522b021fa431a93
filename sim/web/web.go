// Package web is what sim serve's two WebSocket services share: package
// server (the lab pages' runs on /ws) and package class (class mode on
// /class/ws). It holds the same-origin rule, the one WebSocket connection
// type (Conn: a read pump, a single writer, a bounded queue, size limits),
// and the index of the pages and their languages (Index).
package web

import (
	"net/http"
	"net/url"
	"strings"
)

// SameOrigin accepts a WebSocket upgrade without an Origin header (not a
// browser) or whose Origin's host:port is the Host the request was sent to.
func SameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}
