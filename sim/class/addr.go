package class

import (
	"net"
	"net/http"
	"net/netip"
	"time"
)

// What one machine may do, and how many wrong join codes the class takes.
//
// The per-address limits (PerAddress, ConnsPerAddress, WrongCodes) count
// per machine as far as its address tells, by addrKey:
//
//   - Every loopback address (127.0.0.0/8 and ::1) is this one machine:
//     one key. A client here can send from any of 127.0.0.0/8's 16 million
//     addresses; keyed exactly, 300 of them filled a class.
//   - An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is its IPv4 address.
//   - Any other IPv4 address is its own key. On a classroom's network the
//     whole room shares one /24 (usually behind one router), so keying a
//     prefix would put the class under one key and block it.
//   - An IPv6 address counts by its /64: one device may hold many
//     addresses of its /64 (privacy extensions make new ones), so its
//     exact address would let it pass every per-address limit. Except the
//     /64 the server was reached on (the request's local address): a
//     client there is on the server's own link, where every device of the
//     room shares that /64 as IPv4 devices share the /24, so its exact
//     address counts, as an IPv4 address does.
//
// Many machines can still guess together (the room's network, or a
// guesser with many IPv4 addresses), so wrong codes also count for the
// whole class: past WrongCodesClass in a minute, every code check from a
// machine without a student answers "blocked" for the rest of that
// minute, even a right code (else the limit would tell a guesser which
// code is right). Students who joined keep their seats (a rejoin with
// their token checks no code), and their machines may still check codes.
// The teacher's page shows the count, so a teacher sees guessing and can
// give a new code.

// addrKey is the key under which r's client counts for the per-address
// limits (see above).
func addrKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.Is4():
		return ip.String()
	}
	net64 := netip.PrefixFrom(ip, 64).Masked()
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(local.String()); err == nil && net64.Contains(ap.Addr().Unmap().WithZone("")) {
			return ip.String()
		}
	}
	return net64.String()
}

// The answers of a join code's check.
const (
	codeOK      = "ok"
	codeWrong   = "wrong"
	codeBlocked = "blocked" // the machine sent WrongCodes wrong codes in the last minute
	classBusy   = "busy"    // the class took WrongCodesClass wrong codes in the last minute
)

// tryCode checks a join code sent from the machine key (typed on the
// landing page, kept in its cookie, or in a join): codeOK, codeWrong (and
// counted against the machine and the class), codeBlocked or classBusy.
func (s *Server) tryCode(key, code string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tryCodeLocked(key, code)
}

func (s *Server) tryCodeLocked(key, code string) string {
	now := s.now().Unix()
	u := s.addrUseLocked(key)
	defer s.tidyAddrLocked(key)
	u.wrong = recent(u.wrong, now)
	switch {
	case len(u.wrong) >= s.lim.WrongCodes:
		return codeBlocked
	case u.students == 0 && s.wrongCodesLocked() >= s.lim.WrongCodesClass:
		return classBusy
	case s.codeIsLocked(code):
		return codeOK
	}
	u.wrong = append(u.wrong, now)
	if len(s.wrong) < s.lim.WrongCodesClass {
		s.wrong = append(s.wrong, now)
		if len(s.wrong) == s.lim.WrongCodesClass {
			s.logf("sim serve: class: %d wrong join codes in the last minute: new students wait until fewer came in the last minute (the teacher's page shows the count; a new code may help)", len(s.wrong))
		}
	}
	s.version++
	s.touchLocked()
	s.refreshLaterLocked()
	s.sweepAddrsLocked(now)
	return codeWrong
}

// recent drops the times (Unix seconds) older than a minute before now.
func recent(times []int64, now int64) []int64 {
	i := 0
	for i < len(times) && times[i] <= now-60 {
		i++
	}
	if i == len(times) {
		return nil
	}
	return times[i:]
}

// wrongCodesLocked is the number of wrong join codes the class took in
// the last minute.
func (s *Server) wrongCodesLocked() int {
	s.wrong = recent(s.wrong, s.now().Unix())
	return len(s.wrong)
}

// refreshLaterLocked has the teachers' pages drawn again when the oldest
// wrong code of the last minute leaves the count, so the count they show
// goes down without a new event.
func (s *Server) refreshLaterLocked() {
	if s.refresh != nil || s.closed || len(s.wrong) == 0 {
		return
	}
	wait := time.Duration(s.wrong[0]+61-s.now().Unix()) * time.Second
	s.refresh = time.AfterFunc(max(wait, time.Second), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.refresh = nil
		s.wrongCodesLocked()
		s.version++
		s.touchLocked()
		s.refreshLaterLocked()
	})
}

// sweepAddrsLocked forgets the machines that hold nothing but wrong codes
// older than a minute, once there are many more machines than a class
// holds: a machine that guessed once and never came back does not stay.
// At most MaxConns machines hold connections, MaxStudents students and
// WrongCodesClass recent wrong codes (the class counts no more), so a
// sweep at twice that frees at least half the map: amortized, it costs
// nothing per check.
func (s *Server) sweepAddrsLocked(now int64) {
	if len(s.addrs) <= 2*(s.lim.MaxConns+s.lim.MaxStudents+s.lim.WrongCodesClass) {
		return
	}
	for key, u := range s.addrs {
		u.wrong = recent(u.wrong, now)
		s.tidyAddrLocked(key)
	}
}
