package servers

import (
	"crypto/tls"
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
// offer X25519MLKEM768 first.
var Curves = []tls.CurveID{tls.CurveP256}

// MeasureHandshake times full TLS handshakes of this TLS stack (Go's
// crypto/tls) on this machine, client and server in this process over
// loopback with no delay, and returns the median: the CPU a handshake puts
// on the critical path. The model prices handshakes at OpenSSL's speed; a
// real run measures its own and gives it to the model as handshake_cpu, so
// that model and measurement differ in round trips only.
func MeasureHandshake(certs *pki.Certs, version sim.TLSVersion, kind sim.Cert) (time.Duration, error) {
	cert, err := certs.ServerCert(kind)
	if err != nil {
		return 0, err
	}
	pool, err := pki.CAPool(certs.CAPEM)
	if err != nil {
		return 0, err
	}
	v := TLSVersion(version)
	ln, err := netem.Listen("tcp", "")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	srv := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: v, MaxVersion: v, CurvePreferences: Curves, SessionTicketsDisabled: true}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := tls.Server(c, srv)
			tc.Handshake()
			tc.Close()
		}
	}()
	var ds []time.Duration
	for i := range 8 {
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return 0, err
		}
		st := time.Now()
		tc := tls.Client(raw, &tls.Config{ServerName: pki.APIHost, RootCAs: pool, MinVersion: v, MaxVersion: v, CurvePreferences: Curves})
		err = tc.Handshake()
		d := time.Since(st)
		tc.Close()
		if err != nil {
			return 0, err
		}
		if i > 0 { // the first one warms caches up
			ds = append(ds, d)
		}
	}
	ln.Close()
	<-done
	slices.Sort(ds)
	return ds[len(ds)/2].Round(10 * time.Microsecond), nil
}
