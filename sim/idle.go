package sim

import "time"

// A kept connection, taken from its idle list to carry a request now, is
// in one of these states. Both engines ask findIdle, so the rule is
// written once.
type idleFind uint8

const (
	idleUsable  idleFind = iota
	idleDead             // the server's FIN arrived while it sat idle: the client drops it
	idleTooOld           // idle longer than the client's max_idle_age: the client closes it
	idleTooLong          // older than the client's max_lifetime: the client closes it
	idleRaced            // the server closes it as the request goes out: the keep-alive race
)

// idleConn is what findIdle reads of a kept connection: when it was last
// used and opened, and when its server closes it if nothing arrives
// (closing false: never).
type idleConn struct {
	lastUsed, created time.Duration
	closeAt           time.Duration
	closing           bool
}

// findIdle says what a client finds taking connection c at now, over a
// hop whose one way is half: the server's FIN takes half to reach the
// client, and the request half to reach the server, so a request sent
// within half before the server's timer fires meets a closed socket (the
// race), and one sent half after it finds the FIN already there.
func findIdle(c idleConn, now, half, maxIdleAge, maxLifetime time.Duration) idleFind {
	switch {
	case c.closing && now >= c.closeAt+half:
		return idleDead
	case maxIdleAge > 0 && now-c.lastUsed > maxIdleAge:
		return idleTooOld
	case maxLifetime > 0 && now-c.created > maxLifetime:
		return idleTooLong
	case c.closing && now+half >= c.closeAt:
		return idleRaced
	}
	return idleUsable
}
