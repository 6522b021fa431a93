package servers

import (
	"net"
	"strings"
	"sync"
	"time"

	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/miekg/dns"
)

// DNSServer is a real DNS server (messages packed and unpacked by
// github.com/miekg/dns, UDP on loopback) that answers the lab's names with
// 127.0.0.1 after a fixed delay: the time of a lookup that misses every
// cache (the scenario's dns). The delay counts from when the kernel received
// the query (SO_TIMESTAMPNS), so a busy machine does not add to it. For the
// harness's own workers the server answers at once and the resolver holds
// the answer instead; sim upstream's server, for clients such as curl,
// delays at its end.
type DNSServer struct {
	Addr  string // where it listens
	pc    *net.UDPConn
	delay time.Duration
	wg    sync.WaitGroup
}

// zone is the only domain the server answers; anything else is REFUSED.
const zone = "connlab.test."

// StartDNS starts a DNS server on addr ("" for 127.0.0.1 and a port the
// kernel picks) that answers each query delay after it arrived.
func StartDNS(addr string, delay time.Duration) (*DNSServer, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := netem.CheckLoopback(addr); err != nil {
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
	d := &DNSServer{pc: pc, Addr: pc.LocalAddr().String(), delay: delay}
	ts := netem.EnableRxTimestamps(pc)
	d.wg.Add(1)
	go d.serve(ts)
	return d, nil
}

func (d *DNSServer) serve(ts bool) {
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
			at = netem.RxTime(oob[:oobn], now)
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
			netem.SleepUntil(at.Add(d.delay))
			d.pc.WriteToUDP(out, from)
		}()
	}
}

// answer answers A queries under connlab.test with 127.0.0.1 and AAAA
// queries with no address.
func (d *DNSServer) answer(q *dns.Msg) *dns.Msg {
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

// Close stops the server and waits for the answers in flight.
func (d *DNSServer) Close() {
	d.pc.Close()
	d.wg.Wait()
}
