package sim

import "time"

// maxCwnd caps the modelled congestion window (segments); the receive window
// would stop growth long before in practice.
const maxCwnd = 1 << 20

// minRTO is Linux's TCP_RTO_MIN.
const minRTO = 200 * time.Millisecond

// transferRounds returns how many round trips a response of the given size
// takes from a congestion window of cwnd segments under idealised slow start
// (each acknowledged segment grows the window by one: it doubles every round
// trip), and the window afterwards. With the initial window of 10 segments
// and MSS 1460: up to 14.6 KB one round trip, 43.8 KB two, 102 KB three,
// 219 KB four (RFC 6928).
func transferRounds(bytes, mss, cwnd int) (rounds, after int) {
	segs := max(1, (bytes+mss-1)/mss)
	for segs > 0 {
		n := min(cwnd, segs)
		segs -= n
		cwnd = min(cwnd+n, maxCwnd)
		rounds++
	}
	return rounds, cwnd
}

// restartCwnd is the window of a connection of s with window cwnd whose
// server sends after idle for idle.
func restartCwnd(s *Scenario, cwnd int, idle time.Duration) int {
	rto := s.RTT + minRTO
	if !s.SlowStartAfterIdle || idle <= rto {
		return cwnd
	}
	restart := min(s.InitCwnd, cwnd)
	for d := idle - rto; d > 0 && cwnd > restart; d -= rto {
		cwnd >>= 1
	}
	return max(cwnd, restart)
}

// RoundTrips returns the round trips of one call as the model counts them
// on a fresh connection's first call and on a kept connection: TCP's
// handshake, a full TLS handshake (no resumption), setup_rtts, the request,
// and the further windows of the response from the initial window; a kept
// connection pays the last two only. It is an upper bound for later calls
// (resumption, a grown window). The harness allows its own overhead once per
// round trip when it compares a real run with the model.
func (s *Scenario) RoundTrips() (newConn, reused int) {
	rounds, _ := transferRounds(s.ResponseBytes, max(s.MSS, 1), max(s.InitCwnd, 1))
	reused = rounds
	newConn = 1 + s.SetupRTTs + reused
	switch s.TLS {
	case TLS12:
		newConn += 2
	case TLS13:
		newConn++
	}
	return newConn, reused
}
