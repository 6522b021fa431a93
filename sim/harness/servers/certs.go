package servers

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/netem"
)

// APIHost is the name the lab's clients call; the harness's DNS server
// answers it with 127.0.0.1 and the certificates name it.
const APIHost = "api.connlab.test"

// Certs are a CA made at start and two server certificates it signed, one
// per key type the model knows (cert = "rsa2048" or "ecdsa-p256"). They are
// valid for one day, for APIHost, 127.0.0.1 and ::1.
type Certs struct {
	CAPEM    []byte // the CA certificate, for clients (curl --cacert)
	RSAPEM   []byte // certificate and PKCS#8 key, PEM
	ECDSAPEM []byte
}

var (
	certsOnce sync.Once
	certsVal  *Certs
	certsErr  error
)

// SharedCerts generates the certificates once per process: an RSA-2048 key
// takes a noticeable fraction of a second.
func SharedCerts() (*Certs, error) {
	certsOnce.Do(func() { certsVal, certsErr = newCerts() })
	return certsVal, certsErr
}

func newCerts() (*Certs, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "connlab harness CA", Organization: []string{"connlab"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, key crypto.Signer) ([]byte, error) {
		t := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: APIHost},
			DNSNames:     []string{APIHost},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, t, caCert, key.Public(), caKey)
		if err != nil {
			return nil, err
		}
		k, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, err
		}
		out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		return append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})...), nil
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	c := &Certs{CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	if c.RSAPEM, err = leaf(2, rsaKey); err != nil {
		return nil, err
	}
	if c.ECDSAPEM, err = leaf(3, ecKey); err != nil {
		return nil, err
	}
	return c, nil
}

// serverCert returns the certificate for the scenario's cert key.
func (c *Certs) serverCert(kind sim.Cert) (tls.Certificate, error) {
	p := c.RSAPEM
	if kind == sim.CertECDSAP256 {
		p = c.ECDSAPEM
	}
	return tls.X509KeyPair(p, p)
}

// CAPool returns a pool holding the CA certificate caPEM, for clients.
func CAPool(caPEM []byte) (*x509.CertPool, error) {
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("harness: bad CA certificate")
	}
	return p, nil
}

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
func MeasureHandshake(certs *Certs, version sim.TLSVersion, kind sim.Cert) (time.Duration, error) {
	cert, err := certs.serverCert(kind)
	if err != nil {
		return 0, err
	}
	pool, err := CAPool(certs.CAPEM)
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
		tc := tls.Client(raw, &tls.Config{ServerName: APIHost, RootCAs: pool, MinVersion: v, MaxVersion: v, CurvePreferences: Curves})
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
