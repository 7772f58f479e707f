package zktest

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
	"testing"
	"time"
)

// CA is a throwaway certificate authority made by a test: ECDSA P-256,
// valid for a day, its files in a temporary directory.
type CA struct {
	// CertFile is the CA certificate, PEM.
	CertFile string
	// Pool holds the CA certificate, for a tls.Config's RootCAs or ClientCAs.
	Pool *x509.CertPool

	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	n    int64
}

// Pair is a certificate and its key, as PEM files and loaded.
type Pair struct {
	CertFile, KeyFile string
	TLS               tls.Certificate
}

// NewCA makes a CA whose files live in t.TempDir().
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{dir: t.TempDir(), cert: cert, key: key, n: 1, Pool: x509.NewCertPool()}
	ca.Pool.AddCert(cert)
	ca.CertFile = filepath.Join(ca.dir, "ca.pem")
	writePEM(t, ca.CertFile, "CERTIFICATE", der)
	return ca
}

// Server issues a server certificate for 127.0.0.1 and ::1 (IP SANs) and
// localhost.
func (ca *CA) Server(t testing.TB, name string) Pair {
	t.Helper()
	return ca.issue(t, name, x509.ExtKeyUsageServerAuth)
}

// Client issues a client certificate with common name name.
func (ca *CA) Client(t testing.TB, name string) Pair {
	t.Helper()
	return ca.issue(t, name, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issue(t testing.TB, name string, usage x509.ExtKeyUsage) Pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca.n++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.n),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := Pair{
		CertFile: filepath.Join(ca.dir, name+".pem"),
		KeyFile:  filepath.Join(ca.dir, name+"-key.pem"),
	}
	writePEM(t, p.CertFile, "CERTIFICATE", der)
	writePEM(t, p.KeyFile, "PRIVATE KEY", kder)
	p.TLS, err = tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
