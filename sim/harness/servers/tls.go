package servers

import (
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/connlab/connlab/sim/harness/pki"
)

// TLSVersion maps the scenario's tls key to crypto/tls.
func TLSVersion(v sim.TLSVersion) uint16 {
	if v == sim.TLS12 {
		return tls.VersionTLS12
	}
	return tls.VersionTLS13
}

// Curves: the model prices one ECDHE on P-256 per side; Go's default would
// offer X25519MLKEM768 first. The harness's Go clients offer P-256 alone.
var Curves = []tls.CurveID{tls.CurveP256}

// ServerCurves are the groups the harness's TLS servers accept: P-256
// first, and X25519, the one group OpenSSL's clients (PHP's libcurl, in
// WebAssembly and native) send a TLS 1.3 key share for. A server without
// it answers their ClientHello with a HelloRetryRequest, a round trip that
// an API's server does not cost them (it takes X25519) and the model does
// not price. A Go client, offering P-256 alone, still gets P-256. In TLS
// 1.2 Go's server follows the client's order, so OpenSSL's clients get
// X25519 there too, as from an API's server; what a handshake costs PHP is
// measured on this server before each run (handshake_cpu), so the model
// is given that group's cost.
var ServerCurves = []tls.CurveID{tls.CurveP256, tls.X25519}

// idleRounds is how many full and resumed handshakes MeasureHandshake
// times after an idle pause: each costs the pause, so fewer than back to
// back.
const idleRounds = 5

// Handshakes is what a TLS handshake of this TLS stack costs on this
// machine: a full one and a resumed one (a session ticket from the last).
type Handshakes struct {
	Full, Resumed time.Duration
}

// MeasureHandshake times TLS handshakes of this TLS stack (Go's crypto/tls)
// on this machine, client and server in this process over loopback with no
// delay, and returns the medians of full and of resumed ones: the CPU a
// handshake puts on the critical path. The model prices handshakes at
// OpenSSL's speed; a real run measures its own and gives them to the model
// as handshake_cpu and resume_cpu, so that model and measurement differ in
// round trips only. (Go's resumed TLS 1.3 handshake costs several times
// the two ECDHE the model would otherwise charge.)
//
// With idle > 0 the process sleeps that long before each handshake, as a
// run's does when its new connections come after a quiet spell: the
// handshake's code and data are then out of the CPU's caches, and it takes
// more CPU than one that follows another. Back to back, the first of each
// kind is left out instead, as a warm-up.
func MeasureHandshake(certs *pki.Certs, version sim.TLSVersion, kind sim.Cert, idle time.Duration) (Handshakes, error) {
	var hs Handshakes
	cert, err := certs.ServerCert(kind)
	if err != nil {
		return hs, err
	}
	pool, err := pki.CAPool(certs.CAPEM)
	if err != nil {
		return hs, err
	}
	v := TLSVersion(version)
	ln, err := netem.Listen("tcp", "")
	if err != nil {
		return hs, err
	}
	defer ln.Close()
	srv := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: v, MaxVersion: v, CurvePreferences: ServerCurves}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// One byte after the handshake: TLS 1.3 sends its session
			// ticket after the handshake, and the client reads it with it.
			// The client closes first.
			tc := tls.Server(c, srv)
			if tc.Handshake() == nil {
				tc.Write([]byte{1})
				tc.Read(make([]byte, 1))
			}
			tc.Close()
		}
	}()
	// Full and resumed handshakes alternate; each resumed one uses the
	// ticket of the full one before it.
	var full, resumed []time.Duration
	rounds := 16
	if idle > 0 {
		rounds = idleRounds
	}
	for i := range rounds {
		cache := tls.NewLRUClientSessionCache(1)
		for j, resume := range []bool{false, true} {
			time.Sleep(idle)
			raw, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return hs, err
			}
			st := time.Now()
			tc := tls.Client(raw, &tls.Config{ServerName: pki.APIHost, RootCAs: pool, MinVersion: v, MaxVersion: v,
				CurvePreferences: Curves, ClientSessionCache: cache})
			err = tc.Handshake()
			d := time.Since(st)
			if err == nil {
				raw.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, err = tc.Read(make([]byte, 1))
			}
			didResume := tc.ConnectionState().DidResume
			tc.Close()
			if err != nil {
				return hs, err
			}
			if didResume != resume {
				return hs, fmt.Errorf("TLS %s handshake %d of the measurement: resumed %v, want %v", version, 2*i+j+1, didResume, resume)
			}
			switch {
			case i == 0 && idle == 0: // the first of each kind warms caches up
			case resume:
				resumed = append(resumed, d)
			default:
				full = append(full, d)
			}
		}
	}
	ln.Close()
	<-done
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2].Round(10 * time.Microsecond)
	}
	return Handshakes{Full: median(full), Resumed: median(resumed)}, nil
}
