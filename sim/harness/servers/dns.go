package harness

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// dnsServer is a real DNS server (messages packed and unpacked by
// github.com/miekg/dns, UDP on loopback) that answers the lab's names with
// 127.0.0.1 after a fixed delay: the time of a lookup that misses every
// cache (the scenario's dns). The delay counts from when the kernel received
// the query (SO_TIMESTAMPNS), so a busy machine does not add to it. For the
// harness's own workers the server answers at once and the resolver holds
// the answer instead (resolver.hold); sim upstream's server, for clients
// such as curl, delays at its end.
type dnsServer struct {
	pc    *net.UDPConn
	addr  string
	delay time.Duration
	wg    sync.WaitGroup
}

// zone is the only domain the server answers; anything else is REFUSED.
const zone = "connlab.test."

func startDNS(addr string, delay time.Duration) (*dnsServer, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := CheckLoopback(addr); err != nil {
		return nil, err
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	pc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, err
	}
	d := &dnsServer{pc: pc, addr: pc.LocalAddr().String(), delay: delay}
	ts := enableRxTimestamps(pc)
	d.wg.Add(1)
	go d.serve(ts)
	return d, nil
}

func (d *dnsServer) serve(ts bool) {
	defer d.wg.Done()
	buf := make([]byte, 64<<10)
	oob := make([]byte, 128)
	for {
		n, oobn, _, from, err := d.pc.ReadMsgUDP(buf, oob)
		now := time.Now()
		if err != nil {
			return
		}
		at := now
		if ts {
			at = rxTime(oob[:oobn], now)
		}
		q := new(dns.Msg)
		if q.Unpack(buf[:n]) != nil {
			continue
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			out, err := d.answer(q).Pack()
			if err != nil {
				return
			}
			SleepUntil(at.Add(d.delay))
			d.pc.WriteToUDP(out, from)
		}()
	}
}

// answer answers A queries under connlab.test with 127.0.0.1 and AAAA
// queries with no address.
func (d *dnsServer) answer(q *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(q)
	if len(q.Question) != 1 || !dns.IsSubDomain(zone, strings.ToLower(q.Question[0].Name)) {
		m.Rcode = dns.RcodeRefused
		return m
	}
	m.Authoritative = true
	if qs := q.Question[0]; qs.Qtype == dns.TypeA {
		m.Answer = append(m.Answer, &dns.A{
			Hdr: dns.RR_Header{Name: qs.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
			A:   net.IPv4(127, 0, 0, 1),
		})
	}
	return m
}

func (d *dnsServer) Close() {
	d.pc.Close()
	d.wg.Wait()
}

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
	// clients apply the path's (clientPath): the lab process's DNS server
	// answers at once and the answer is held until hold after the query
	// left, in a precise wait. A worker that slept in the netpoller
	// through a server-side delay paid its wake-up on top (0.3–0.7 ms a
	// lookup on this kind of VM). Servers for foreign clients (sim
	// upstream) delay at their end instead.
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
	if err := CheckLoopback(r.server); err != nil {
		return "", err
	}
	sent := time.Now()
	resp, err := exchange(ctx, r.server, host)
	if err != nil {
		return "", fmt.Errorf("DNS lookup of %s: %w", host, err)
	}
	if r.hold > 0 {
		if err := sleepCtx(ctx, sent.Add(r.hold)); err != nil {
			return "", err
		}
	}
	for _, rr := range resp.Answer {
		if a, ok := rr.(*dns.A); ok {
			addr := a.A.String()
			if err := CheckLoopback(addr); err != nil {
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
	c, err := dialLoopback(ctx, "udp", server)
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
