package zktest

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testca"
)

func TestStartServes(t *testing.T) {
	s := Start(t)
	out, err := s.FourLetter("ruok")
	if err != nil || out != "imok" {
		t.Fatalf("ruok = %q, %v", out, err)
	}
	m, err := s.Mntr()
	if err != nil {
		t.Fatal(err)
	}
	if m["zk_server_state"] != "standalone" {
		t.Fatalf("zk_server_state = %q", m["zk_server_state"])
	}
	conf, err := s.FourLetter("conf")
	if err != nil || !strings.Contains(conf, "tickTime=100") {
		t.Fatalf("conf = %q, %v", conf, err)
	}
	s.Stop()
	if _, err := s.FourLetter("ruok"); err == nil {
		t.Fatal("server still answers after Stop")
	}
}

func TestDigest(t *testing.T) {
	// As printed by java org.apache.zookeeper.server.auth.DigestAuthenticationProvider super:secret.
	if got, want := Digest("super", "secret"), "super:lK75jTNcA+U9vtVEw5vB51mj/w4="; got != want {
		t.Fatalf("Digest = %q, want %q", got, want)
	}
}

func TestStartSecure(t *testing.T) {
	ca := testca.New(t, "zktest CA")
	srv := ca.Issue(t, "server")
	cli := ca.Issue(t, "client")
	pem, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(cli.CertFile, cli.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := Start(t, WithSuperDigest("secret"), WithTLS(TLS{Cert: srv.CertFile, Key: srv.KeyFile, CA: ca.CertFile}))
	if s.SecureAddr() == "" {
		t.Fatal("no secure address")
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", s.SecureAddr(), &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatalf("TLS to %s: %v", s.SecureAddr(), err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "ruok"); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	if string(b) != "imok" {
		t.Fatalf("ruok over TLS = %q", b)
	}
}
