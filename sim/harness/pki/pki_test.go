package pki

import (
	"crypto/x509"
	"testing"

	"github.com/connlab/connlab/sim"
)

// The shared certificates are made once; each server certificate verifies
// against the CA for APIHost and the loopback addresses, and not for
// another name.
func TestShared(t *testing.T) {
	c, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	if c2, _ := Shared(); c2 != c {
		t.Error("Shared made the certificates twice")
	}
	pool, err := CAPool(c.CAPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []sim.Cert{sim.CertRSA2048, sim.CertECDSAP256} {
		tc, err := c.ServerCert(kind)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		leaf, err := x509.ParseCertificate(tc.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{APIHost, "127.0.0.1", "::1"} {
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool}); err != nil {
				t.Errorf("%s for %s: %v", kind, name, err)
			}
		}
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: pool}); err == nil {
			t.Errorf("%s verifies for example.com", kind)
		}
	}
	if _, err := CAPool([]byte("not a certificate")); err == nil {
		t.Error("CAPool took a bad certificate")
	}
}
