package harness

import (
	"github.com/connlab/connlab/sim"
)

// Servers are an upstream and a DNS server started for clients the harness
// does not own (sim upstream).
type Servers struct {
	Upstream *Upstream
	DNSAddr  string
	CAPEM    []byte // the CA the upstream's certificate chains to
	dns      *dnsServer
}

// StartServers starts the upstream on addr and the DNS server on dnsAddr
// (both loopback, "" or port 0 for a port the kernel picks) for scenario s.
// The TCP handshake's round trip is charged on the first bytes each
// connection receives, since the client's dialer is not the harness's.
func StartServers(addr, dnsAddr string, s sim.Scenario) (*Servers, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	certs, err := sharedCerts()
	if err != nil {
		return nil, err
	}
	d, err := startDNS(dnsAddr, s.DNS)
	if err != nil {
		return nil, err
	}
	up, err := StartUpstream(addr, upstreamConfig(&s, s.RTT, foreignDialers), certs, nil)
	if err != nil {
		d.Close()
		return nil, err
	}
	return &Servers{Upstream: up, DNSAddr: d.addr, CAPEM: certs.CAPEM, dns: d}, nil
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
