package servers

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/pki"
)

// TestMeasureHandshake: both TLS versions give a full and a resumed
// handshake's cost, and with an RSA key, whose signature only a full
// handshake makes, the full one costs more.
func TestMeasureHandshake(t *testing.T) {
	certs, err := pki.Shared()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []sim.TLSVersion{sim.TLS12, sim.TLS13} {
		hs, err := MeasureHandshake(certs, v, sim.CertRSA2048, 0)
		if err != nil {
			t.Fatalf("TLS %s: %v", v, err)
		}
		t.Logf("TLS %s, RSA-2048: full %s, resumed %s", v, hs.Full, hs.Resumed)
		if hs.Resumed <= 0 || hs.Full <= hs.Resumed {
			t.Errorf("TLS %s: full %s, resumed %s: want 0 < resumed < full", v, hs.Full, hs.Resumed)
		}
	}
}

// TestMeasureHandshakeAfterIdle: with an idle pause, every handshake
// waits it out first (so the measurement takes at least that long for each
// of them) and both kinds are still measured. Whether a cold handshake
// costs more is the machine's to say: it is logged, not asserted.
func TestMeasureHandshakeAfterIdle(t *testing.T) {
	certs, err := pki.Shared()
	if err != nil {
		t.Fatal(err)
	}
	warm, err := MeasureHandshake(certs, sim.TLS13, sim.CertECDSAP256, 0)
	if err != nil {
		t.Fatal(err)
	}
	const idle = 20 * time.Millisecond
	start := time.Now()
	cold, err := MeasureHandshake(certs, sim.TLS13, sim.CertECDSAP256, idle)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("TLS 1.3, P-256: back to back full %s, resumed %s; after %s idle full %s, resumed %s", warm.Full, warm.Resumed, idle, cold.Full, cold.Resumed)
	if want := 2 * idleRounds * idle; took < want {
		t.Errorf("measuring after %s idle took %s, want at least %s (%d handshakes, each after the pause)", idle, took, want, 2*idleRounds)
	}
	if cold.Resumed <= 0 || cold.Full <= 0 {
		t.Errorf("after idle: full %s, resumed %s: want both measured", cold.Full, cold.Resumed)
	}
}

// helloCounter counts the ClientHello messages a client writes (a TLS
// record of type 22 holding a handshake message of type 1): two mean the
// server asked again (HelloRetryRequest).
type helloCounter struct {
	net.Conn
	hellos int
}

func (c *helloCounter) Write(b []byte) (int, error) {
	if len(b) > 5 && b[0] == 22 && b[5] == 1 {
		c.hellos++
	}
	return c.Conn.Write(b)
}

// TestUpstreamTakesOpenSSLKeyShare: a TLS 1.3 client that sends an X25519
// key share, as OpenSSL's do (PHP's libcurl), completes its handshake with
// the upstream in one ClientHello, without a HelloRetryRequest's round
// trip; the harness's own clients, offering P-256 alone, get P-256.
func TestUpstreamTakesOpenSSLKeyShare(t *testing.T) {
	certs, err := pki.Shared()
	if err != nil {
		t.Fatal(err)
	}
	up, err := StartUpstream("", UpstreamConfig{TLS: sim.TLS13, Cert: sim.CertRSA2048, KeepaliveTimeout: time.Second}, certs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	pool, err := pki.CAPool(certs.CAPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		curves []tls.CurveID
		want   tls.CurveID
	}{
		{"OpenSSL's key share (X25519, then P-256)", []tls.CurveID{tls.X25519, tls.CurveP256}, tls.X25519},
		{"the harness's clients (P-256)", Curves, tls.CurveP256},
	} {
		raw, err := net.Dial("tcp", up.Addr())
		if err != nil {
			t.Fatal(err)
		}
		hc := &helloCounter{Conn: raw}
		tc := tls.Client(hc, &tls.Config{ServerName: pki.APIHost, RootCAs: pool, MinVersion: tls.VersionTLS13, CurvePreferences: c.curves})
		err = tc.Handshake()
		st := tc.ConnectionState()
		tc.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if hc.hellos != 1 || st.CurveID != c.want {
			t.Errorf("%s: %d ClientHellos, group %s; want 1 (no HelloRetryRequest) and %s", c.name, hc.hellos, st.CurveID, c.want)
		}
	}
}

// TestUpstreamResumesTLS12ByTicketOnly: with tickets on, the upstream
// (Go's crypto/tls, which keeps no session IDs) resumes a TLS 1.2 session
// after it has closed the first connection idle, but only for a client
// that asks for a ticket. libcurl with OpenSSL never asks (curl's
// lib/vtls/openssl.c sets SSL_OP_NO_TICKET), which is why the php setups'
// real runs make a full TLS 1.2 handshake on every new connection
// (roles.curlTimers); the client that sets SessionTicketsDisabled here
// stands for it.
func TestUpstreamResumesTLS12ByTicketOnly(t *testing.T) {
	certs, err := pki.Shared()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pki.CAPool(certs.CAPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tickets, clientAsks, want bool
	}{{true, true, true}, {true, false, false}, {false, true, false}} {
		up, err := StartUpstream("", UpstreamConfig{TLS: sim.TLS12, Cert: sim.CertRSA2048, Tickets: c.tickets, KeepaliveTimeout: 100 * time.Millisecond}, certs, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &tls.Config{ServerName: pki.APIHost, RootCAs: pool, MaxVersion: tls.VersionTLS12,
			ClientSessionCache: tls.NewLRUClientSessionCache(4), SessionTicketsDisabled: !c.clientAsks}
		var resumed []bool
		for range 2 {
			tc, err := tls.Dial("tcp", up.Addr(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			resumed = append(resumed, tc.ConnectionState().DidResume)
			// Send a request and wait for the upstream's idle close (EOF),
			// as after the lab's pause.
			tc.Write([]byte("GET / HTTP/1.1\r\nHost: " + pki.APIHost + "\r\n\r\n"))
			tc.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 64<<10)
			for err == nil {
				_, err = tc.Read(buf)
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the upstream did not close the idle connection")
			}
			tc.Close()
		}
		up.Close()
		if resumed[0] || resumed[1] != c.want {
			t.Errorf("tickets %v, client asks for one %v: resumed %v, want [false %v]", c.tickets, c.clientAsks, resumed, c.want)
		}
	}
}
