package sim

import "time"

// resolve is a lookup of s's server name by a client whose cache is
// owner ow, at time at: it takes s.DNS unless ow holds
// an answer. The answer is cached for DNSCacheTimeout (curl: 60 s,
// whatever the record's TTL); a connection that is reused needs no lookup
// at all, because curl matches kept connections by host name.
func resolve(ow *owner, s *Scenario, at time.Duration) time.Duration {
	if s.DNS == 0 {
		return 0
	}
	if ow.hasDNS && s.DNSCacheTimeout > 0 && at-ow.dnsAt < s.DNSCacheTimeout {
		return 0
	}
	if s.DNSCacheTimeout > 0 {
		ow.hasDNS, ow.dnsAt = true, at+s.DNS
	}
	return s.DNS
}
