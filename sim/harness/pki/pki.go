// Package pki holds the certificates of a real run: a CA made at start and
// two server certificates it signed for APIHost. The harness makes them
// once per process (Shared); they cross to the lab and worker processes as
// PEM in package wire's messages, and package servers presents them.
package pki

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
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
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

// Shared generates the certificates once per process: an RSA-2048 key
// takes a noticeable fraction of a second.
func Shared() (*Certs, error) {
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

// ServerCert returns the certificate for the scenario's cert key.
func (c *Certs) ServerCert(kind sim.Cert) (tls.Certificate, error) {
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
