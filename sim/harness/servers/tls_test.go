package servers

import (
	"testing"

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
		hs, err := MeasureHandshake(certs, v, sim.CertRSA2048)
		if err != nil {
			t.Fatalf("TLS %s: %v", v, err)
		}
		t.Logf("TLS %s, RSA-2048: full %s, resumed %s", v, hs.Full, hs.Resumed)
		if hs.Resumed <= 0 || hs.Full <= hs.Resumed {
			t.Errorf("TLS %s: full %s, resumed %s: want 0 < resumed < full", v, hs.Full, hs.Resumed)
		}
	}
}
