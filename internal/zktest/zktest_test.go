package zktest

import (
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"
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
	ca := NewCA(t, "zktest CA")
	srv := ca.Server(t, "server")
	cli := ca.Client(t, "client")
	s := Start(t, WithSuperDigest("secret"), WithTLS(TLS{Cert: srv.CertFile, Key: srv.KeyFile, CA: ca.CertFile}))
	if s.SecureAddr() == "" {
		t.Fatal("no secure address")
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", s.SecureAddr(), &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{cli.TLS}})
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
