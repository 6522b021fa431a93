package sim

import "time"

// lookup resolves the server's name for a new connection of owner o at time
// at and returns how long it took. The answer is cached by the owner for
// DNSCacheTimeout (curl: 60 s, whatever the record's TTL); a connection that
// is reused needs no lookup at all, because curl matches kept connections by
// host name.
func (m *model) lookup(o int32, at time.Duration) time.Duration {
	if m.s.DNS == 0 {
		return 0
	}
	ow := &m.owners[o]
	if ow.hasDNS && m.s.DNSCacheTimeout > 0 && at-ow.dnsAt < m.s.DNSCacheTimeout {
		return 0
	}
	if m.s.DNSCacheTimeout > 0 {
		ow.hasDNS, ow.dnsAt = true, at+m.s.DNS
	}
	return m.s.DNS
}
