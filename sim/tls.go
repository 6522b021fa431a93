package sim

import "time"

// Handshake CPU costs, from `openssl speed` (OpenSSL 3.0, one shared vCPU;
// indicative). The server signs, the client verifies, both do one ECDH.
const (
	rsa2048Sign   = 720 * time.Microsecond
	rsa2048Verify = 20 * time.Microsecond
	p256Sign      = 28 * time.Microsecond
	p256Verify    = 70 * time.Microsecond
	ecdhP256      = 55 * time.Microsecond
)

// handshake is the cost of one TLS handshake on a new connection.
type handshake struct {
	kind Handshake
	rtts int           // round trips before the request may be sent
	cpu  time.Duration // client and server CPU on the critical path
}

// tlsHandshake returns the handshake a new connection of s does (a single
// hop's, or a chain's hop into a tier with that tier's scenario), given
// whether the client holds a session it may resume:
//
//	TLS 1.2 full           2 RTT, certificate signature + verification + ECDHE
//	TLS 1.2 resumed        1 RTT, symmetric crypto only
//	TLS 1.3 full           1 RTT, signature + verification + ECDHE
//	TLS 1.3 resumed (PSK)  1 RTT, ECDHE only (psk_dhe_ke)
//	TLS 1.3 0-RTT          0 RTT: the request rides with the ClientHello
//
// (RFC 5246, RFC 8446 §2.)
func tlsHandshake(s *Scenario, haveSession bool) handshake {
	sign, verify := rsa2048Sign, rsa2048Verify
	if s.Cert == CertECDSAP256 {
		sign, verify = p256Sign, p256Verify
	}
	full := sign + verify + 2*ecdhP256
	if s.HandshakeCPU > 0 {
		full = s.HandshakeCPU // measured, e.g. for another TLS stack
	}
	resumed := 2 * ecdhP256 // TLS 1.3 psk_dhe_ke: one ECDHE per side
	if s.TLS == TLS12 {
		resumed = 0 // abbreviated handshake: symmetric crypto only
	}
	if s.ResumeCPU > 0 {
		resumed = s.ResumeCPU // measured, e.g. for another TLS stack
	}
	resume := haveSession && s.TLSResume
	switch {
	case s.TLS == TLS12 && resume:
		return handshake{HandshakeResumed, 1, resumed}
	case s.TLS == TLS12:
		return handshake{HandshakeFull, 2, full}
	case resume && s.EarlyData:
		return handshake{Handshake0RTT, 0, resumed}
	case resume:
		return handshake{HandshakeResumed, 1, resumed}
	default:
		return handshake{HandshakeFull, 1, full}
	}
}
