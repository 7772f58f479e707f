package zk

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/testca"
	"github.com/batonhq/baton/internal/zktest"
)

// testTLS runs the TLS tests on srv, whose secure client port requires
// client certificates from ca.
func testTLS(t *testing.T, srv *zktest.Server, ca *testca.CA) {
	client := ca.Issue(t, "alice")
	good := ca.ClientConfig(t, &client)

	t.Run("Mutex", func(t *testing.T) {
		ctx := ctxT(t)
		path := testPath(t)
		// TLS and digest ACLs together, two sessions contending.
		s1 := openAt(t, srv.SecureAddr(), secTTL, WithTLS(good), digest("alice"), WithACL(CreatorACL...))
		s2 := openAt(t, srv.SecureAddr(), secTTL, WithTLS(good), digest("alice"), WithACL(CreatorACL...))
		m1, m2 := baton.NewMutex(s1, path), baton.NewMutex(s2, path)
		l1, err := m1.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			l2, err := m2.Lock(ctx)
			if err == nil && l2.Token() <= l1.Token() {
				err = errors.New("token did not increase")
			}
			got <- err
		}()
		waitKids(t, ctx, s1, path, 2)
		if err := m1.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := within(t, got, 20*time.Second, "second holder over TLS"); err != nil {
			t.Fatal(err)
		}
		if err := m2.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})

	// A client certificate is an identity too (x509:CN=alice), but
	// CreatorACL grants only the digest: another user presenting the same
	// certificate cannot break the lock.
	t.Run("SharedCertificate", func(t *testing.T) {
		ctx := ctxT(t)
		path := testPath(t)
		s := openAt(t, srv.SecureAddr(), secTTL, WithTLS(good), digest("alice"), WithACL(CreatorACL...))
		if _, err := baton.NewMutex(s, path).Lock(ctx); err != nil {
			t.Fatal(err)
		}
		node := kidsOf(t, ctx, s, path)[0].Path
		dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
			d := &net.Dialer{Timeout: timeout}
			cfg := good.Clone()
			cfg.ServerName = "127.0.0.1"
			return tls.DialWithDialer(d, network, addr, cfg)
		}
		zc := rawConnWith(t, srv.SecureAddr(), dial, "mallory:pw")
		if err := zc.Delete(node, -1); !errors.Is(err, gozk.ErrNoAuth) {
			t.Fatalf("delete by another user with the same certificate: %v, want ErrNoAuth", err)
		}
		acl, _, err := rawConn(t, srv.Addr(), zktest.SuperUser+":"+superPassword).GetACL(node)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range acl {
			if e.Scheme == "x509" {
				t.Fatalf("ACL of %s grants the certificate: %v", node, acl)
			}
		}
	})

	t.Run("WrongCA", func(t *testing.T) {
		other := testca.New(t, "some other CA")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		_, err := Open(ctx, []string{srv.SecureAddr()}, WithTLS(other.ClientConfig(t, &client)))
		t.Log(err)
		var verr *tls.CertificateVerificationError
		if !errors.As(err, &verr) {
			t.Fatalf("Open trusting another CA: %v, want a certificate verification error", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("Open waited for its deadline (%v) instead of failing at once: %v", time.Since(start), err)
		}
	})

	// Without a client certificate, and in plain TCP on the secure port,
	// the server closes the connection: Open fails by its deadline, with
	// the last connection error.
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"NoClientCert", []Option{WithTLS(ca.ClientConfig(t, nil))}, "tls"},
		{"PlainToSecurePort", nil, "use WithTLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each waits out its deadline
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := Open(ctx, []string{srv.SecureAddr()}, tc.opts...)
				done <- err
			}()
			err := within(t, done, 15*time.Second, "Open")
			t.Log(err)
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want the deadline and %q", err, tc.want)
			}
		})
	}

	t.Run("TLSToPlainPort", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := Open(ctx, []string{srv.Addr()}, WithTLS(good))
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), "secure client port") {
			t.Fatalf("TLS to the plain port: %v, want a TLS handshake error", err)
		}
	})
}
