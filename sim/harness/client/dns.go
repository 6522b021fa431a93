package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/miekg/dns"
)

// dnsCache is curl's DNS cache as one share handle or easy handle keeps it:
// an answer is kept for dns_cache_timeout, whatever its TTL (curl ignores
// TTLs), and a connection that is reused needs no lookup at all.
type dnsCache struct {
	mu      sync.Mutex
	addr    string
	at      time.Time // when the answer arrived
	have    bool
	timeout time.Duration
}

// resolver asks the harness's DNS server, never the system's.
type resolver struct {
	server string // the DNS server's address; "" when the scenario's dns is 0
	// hold: the lookup's delay applied at this end, as the harness's own
	// clients apply the path's (servers.ClientPath): the lab process's DNS
	// server answers at once and the answer is held until hold after the
	// query left, in a precise wait. A worker that slept in the netpoller
	// through a server-side delay would pay its wake-up on top. Servers
	// for foreign clients (sim upstream) delay at their end instead.
	hold time.Duration
}

// lookup returns the address of host, from c while it is fresh.
func (r resolver) lookup(ctx context.Context, c *dnsCache, host string) (string, error) {
	if r.server == "" {
		return "127.0.0.1", nil // dns = 0: nothing to resolve (127.0.0.1)
	}
	c.mu.Lock()
	if c.have && c.timeout > 0 && time.Since(c.at) < c.timeout {
		a := c.addr
		c.mu.Unlock()
		return a, nil
	}
	c.mu.Unlock()
	if err := netem.CheckLoopback(r.server); err != nil {
		return "", err
	}
	sent := time.Now()
	resp, err := exchange(ctx, r.server, host)
	if err != nil {
		return "", fmt.Errorf("DNS lookup of %s: %w", host, err)
	}
	if r.hold > 0 {
		if err := netem.SleepCtx(ctx, sent.Add(r.hold)); err != nil {
			return "", err
		}
	}
	for _, rr := range resp.Answer {
		if a, ok := rr.(*dns.A); ok {
			addr := a.A.String()
			if err := netem.CheckLoopback(addr); err != nil {
				return "", err
			}
			c.mu.Lock()
			if c.timeout > 0 {
				c.addr, c.at, c.have = addr, time.Now(), true
			}
			c.mu.Unlock()
			return addr, nil
		}
	}
	return "", fmt.Errorf("DNS lookup of %s: no address (%s)", host, dns.RcodeToString[resp.Rcode])
}

// exchange sends one A query over UDP and reads the answer with the same ID.
func exchange(ctx context.Context, server, host string) (*dns.Msg, error) {
	c, err := netem.Dial(ctx, "udp", server)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(host), dns.TypeA)
	out, err := q.Pack()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetDeadline(deadline)
	if _, err := c.Write(out); err != nil {
		return nil, err
	}
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return nil, err
		}
		m := new(dns.Msg)
		if m.Unpack(buf[:n]) == nil && m.Id == q.Id {
			return m, nil
		}
	}
}
