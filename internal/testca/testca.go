// Package testca makes throwaway certificate authorities for tests: an
// ECDSA CA and leaf certificates for loopback (IP SANs 127.0.0.1 and ::1,
// DNS localhost), written as PEM files into a test's temp dir.
package testca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a test certificate authority.
type CA struct {
	// CertFile is the CA certificate, PEM.
	CertFile string

	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Leaf is a certificate issued by a CA, with its key, as PEM files.
type Leaf struct {
	// CertFile is the certificate, KeyFile its private key (PKCS #8).
	CertFile, KeyFile string
}

var serial atomic.Int64

// New makes a CA named name whose files go to a new temp dir of t.
func New(t testing.TB, name string) *CA {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber:          next(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	key, der := sign(t, tmpl, nil, nil)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{dir: t.TempDir(), cert: cert, key: key}
	ca.CertFile = filepath.Join(ca.dir, name+"-ca.pem")
	write(t, ca.CertFile, "CERTIFICATE", der)
	return ca
}

// Issue makes a certificate for common name cn, good for both server and
// client authentication, for loopback addresses and localhost.
func (ca *CA) Issue(t testing.TB, cn string) Leaf {
	t.Helper()
	return ca.IssueFor(t, cn, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost"})
}

// IssueFor is Issue for the given IP addresses and DNS names only (a
// certificate that does not name localhost, say).
func (ca *CA) IssueFor(t testing.TB, cn string, ips []net.IP, dns []string) Leaf {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: next(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  ips,
		DNSNames:     dns,
	}
	key, der := sign(t, tmpl, ca.cert, ca.key)
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	l := Leaf{CertFile: filepath.Join(ca.dir, cn+".pem"), KeyFile: filepath.Join(ca.dir, cn+"-key.pem")}
	write(t, l.CertFile, "CERTIFICATE", der)
	write(t, l.KeyFile, "PRIVATE KEY", pk)
	return l
}

// sign makes a P-256 key and the certificate tmpl for it, signed by parent
// with parentKey, or by the new key itself (a self-signed certificate)
// when parent is nil; it returns the key and the certificate's DER.
func sign(t testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return key, der
}

func next() *big.Int {
	return big.NewInt(time.Now().UnixNano() + serial.Add(1))
}

func write(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ClientConfig is a client TLS configuration that trusts ca and presents
// leaf, if not nil, as its client certificate.
func (ca *CA) ClientConfig(t testing.TB, leaf *Leaf) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if leaf != nil {
		c, err := tls.LoadX509KeyPair(leaf.CertFile, leaf.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}
