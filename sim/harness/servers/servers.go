// Package servers holds the servers a real run calls, all on loopback: the
// HTTPS (or HTTP) upstream with the emulated path at its end, the DNS
// server, Redis (miniredis or redis-server) behind a delaying front, nginx
// as a reverse proxy, and the certificates they present.
package servers

import (
	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/pki"
)

// Servers are an upstream and a DNS server started for clients the harness
// does not own (sim upstream).
type Servers struct {
	Upstream *Upstream
	DNSAddr  string
	CAPEM    []byte // the CA the upstream's certificate chains to
	dns      *DNSServer
}

// StartServers starts the upstream on addr and the DNS server on dnsAddr
// (both loopback, "" or port 0 for a port the kernel picks) for scenario s.
// The TCP handshake's round trip is charged on the first bytes each
// connection receives, since the client's dialer is not the harness's.
func StartServers(addr, dnsAddr string, s sim.Scenario) (*Servers, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	certs, err := pki.Shared()
	if err != nil {
		return nil, err
	}
	d, err := StartDNS(dnsAddr, s.DNS)
	if err != nil {
		return nil, err
	}
	up, err := StartUpstream(addr, ConfigFor(&s, s.RTT, ForeignDialers), certs, nil)
	if err != nil {
		d.Close()
		return nil, err
	}
	return &Servers{Upstream: up, DNSAddr: d.Addr, CAPEM: certs.CAPEM, dns: d}, nil
}

// Close stops both servers and waits for their connections to end.
func (s *Servers) Close() {
	s.Upstream.Close()
	s.dns.Close()
}

// Stats returns the connections accepted and the requests served so far.
func (u *Upstream) Stats() (accepted, requests int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.Accepted, u.Requests
}
