package etcd_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/testca"
)

const rootPW = "r00t-Pa55word"

// authSrv starts an etcd with authentication on (user root, rootPW).
func authSrv(t *testing.T) *etcdtest.Server {
	t.Helper()
	return etcdtest.StartWith(t, etcdtest.Options{RootPassword: rootPW})
}

// noSecret fails the test if err's message shows any of the secrets.
func noSecret(t *testing.T, err error, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if err != nil && strings.Contains(err.Error(), s) {
			t.Errorf("error shows a secret: %v", err)
		}
	}
}

// lockRound takes and releases a lock on s.
func lockRound(t *testing.T, s *baton.Session, name string) {
	t.Helper()
	m := baton.NewMutex(s, name)
	if _, err := m.Lock(testCtx(t)); err != nil {
		t.Fatalf("lock %s: %v", name, err)
	}
	if err := m.Unlock(testCtx(t)); err != nil {
		t.Fatalf("unlock %s: %v", name, err)
	}
}

// TestAuth: on a server with authentication, the right password opens a
// session that locks; a wrong password or none fails at once with an
// error that says so and never shows a password.
func TestAuth(t *testing.T) {
	srv := authSrv(t)
	s := openT(t, srv.Endpoints(), etcd.WithTTL(2*time.Second), etcd.WithAuth("root", rootPW))
	lockRound(t, s, "/auth/ok")

	for _, tc := range []struct {
		name string
		opts []etcd.Option
		want error
	}{
		{"wrong password", []etcd.Option{etcd.WithAuth("root", "not-the-Pa55word")}, rpctypes.ErrAuthFailed},
		{"unknown user", []etcd.Option{etcd.WithAuth("nobody", "not-the-Pa55word")}, rpctypes.ErrAuthFailed},
		{"no credentials", nil, etcd.ErrAuthRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := etcd.Open(ctx, srv.Endpoints(), append(tc.opts, etcd.WithTTL(2*time.Second))...)
			if err == nil {
				_ = s.Close(ctx)
				t.Fatal("opened")
			}
			if !errors.Is(err, tc.want) || !etcd.IsAuthError(err) || !errors.Is(err, baton.ErrPermission) {
				t.Errorf("error %v: want %v, IsAuthError and baton.ErrPermission", err, tc.want)
			}
			noSecret(t, err, rootPW, "not-the-Pa55word")
			// Promptly: not after some dial timeout.
			if d := time.Since(began); d > 3*time.Second {
				t.Errorf("failed after %v", d)
			}
			t.Logf("%v (after %v)", err, time.Since(began).Round(time.Millisecond))
		})
	}
}

// TestAuthStrangerCannotBreakLock: a user whose role covers another key
// prefix can neither delete the holder's key, nor revoke its lease, nor
// contend: the holder keeps the lock (etcd's form of "a stranger cannot
// break a lock").
func TestAuthStrangerCannotBreakLock(t *testing.T) {
	srv := authSrv(t)
	ctx := testCtx(t)
	root, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second,
		Username: "root", Password: rootPW, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, u := range []struct{ user, prefix string }{{"alice", "/locks/"}, {"mallory", "/mallory/"}} {
		steps := []func() error{
			func() error { _, err := root.RoleAdd(ctx, u.user); return err },
			func() error {
				_, err := root.RoleGrantPermission(ctx, u.user, u.prefix, clientv3.GetPrefixRangeEnd(u.prefix), clientv3.PermissionType(clientv3.PermReadWrite))
				return err
			},
			func() error { _, err := root.UserAdd(ctx, u.user, u.user+"-pw"); return err },
			func() error { _, err := root.UserGrantRole(ctx, u.user, u.user); return err },
		}
		for _, f := range steps {
			if err := f(); err != nil {
				t.Fatalf("set up %s: %v", u.user, err)
			}
		}
	}
	alice := openT(t, srv.Endpoints(), etcd.WithTTL(5*time.Second), etcd.WithAuth("alice", "alice-pw"))
	m := baton.NewMutex(alice, "/locks/build")
	lease, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held, err := root.Get(ctx, "/locks/build/", clientv3.WithPrefix())
	if err != nil || len(held.Kvs) != 1 {
		t.Fatalf("holder's key: %v %v", held, err)
	}
	key := string(held.Kvs[0].Key)

	mallory := openT(t, srv.Endpoints(), etcd.WithTTL(5*time.Second), etcd.WithAuth("mallory", "mallory-pw"))
	// The stranger's own client, with the same credentials as its session.
	mcli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second,
		Username: "mallory", Password: "mallory-pw", Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer mcli.Close()
	if _, err := mcli.Delete(ctx, key); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("stranger deletes the holder's key: %v, want %v", err, rpctypes.ErrPermissionDenied)
	}
	if _, err := mcli.Delete(ctx, "/locks/", clientv3.WithPrefix()); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("stranger deletes the lock dir: %v, want %v", err, rpctypes.ErrPermissionDenied)
	}
	if _, err := mcli.Revoke(ctx, clientv3.LeaseID(held.Kvs[0].Lease)); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("stranger revokes the holder's lease: %v, want %v", err, rpctypes.ErrPermissionDenied)
	}
	// Contending fails at once with a permission error, not a wait.
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := baton.NewMutex(mallory, "/locks/build").Lock(lctx); err == nil || !etcd.IsAuthError(err) || !errors.Is(err, baton.ErrPermission) || lctx.Err() != nil {
		t.Errorf("stranger contends: %v, want a permission error (baton.ErrPermission)", err)
	} else {
		t.Logf("stranger contends: %v", err)
	}
	// Mallory's own prefix works.
	lockRound(t, mallory, "/mallory/own")

	// The holder still holds.
	select {
	case <-lease.Done():
		t.Fatalf("holder lost the lock: %v", lease.Err())
	default:
	}
	if r, err := root.Get(ctx, key); err != nil || len(r.Kvs) != 1 || r.Kvs[0].CreateRevision != lease.Token() {
		t.Fatalf("holder's key after the attempts: %v %v", r, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTLSClientCerts: a server requiring client certificates serves a
// client with a certificate of its CA; a client with a certificate of
// another CA, or with none, or that does not trust the server's CA, fails
// within its deadline.
func TestTLSClientCerts(t *testing.T) {
	ca, other := testca.New(t, "etcd"), testca.New(t, "stranger")
	srvCert, good, bad := ca.Issue(t, "server"), ca.Issue(t, "client"), other.Issue(t, "client")
	srv := etcdtest.StartWith(t, etcdtest.Options{CertFile: srvCert.CertFile, KeyFile: srvCert.KeyFile, ClientCAFile: ca.CertFile})
	s := openT(t, srv.Endpoints(), etcd.WithTTL(2*time.Second), etcd.WithTLS(ca.ClientConfig(t, &good)))
	lockRound(t, s, "/tls/ok")
	// host:port without a scheme takes TLS too; http:// is refused.
	s2 := openT(t, []string{srv.Addr()}, etcd.WithTTL(2*time.Second), etcd.WithTLS(ca.ClientConfig(t, &good)))
	lockRound(t, s2, "/tls/bare")
	if _, err := etcd.Open(testCtx(t), []string{"http://" + srv.Addr()}, etcd.WithTLS(ca.ClientConfig(t, &good))); err == nil || !strings.Contains(err.Error(), "https://") {
		t.Errorf("http:// endpoint with TLS: %v", err)
	}

	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		want string
	}{
		{"cert of another CA", ca.ClientConfig(t, &bad), "refused the TLS connection"},
		{"no cert", ca.ClientConfig(t, nil), "refused the TLS connection"},
		{"server not trusted", other.ClientConfig(t, &bad), "does not trust"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := etcd.Open(ctx, srv.Endpoints(), etcd.WithTTL(2*time.Second), etcd.WithTLS(tc.cfg))
			if err == nil {
				_ = s.Close(ctx)
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v does not say %q", err, tc.want)
			}
			// Promptly: not after the deadline.
			if d := time.Since(began); d > 5*time.Second {
				t.Errorf("failed after %v", d)
			}
			t.Logf("%v (after %v)", err, time.Since(began).Round(time.Millisecond))
		})
	}
}

// TestRequestTooLarge: data over the server's request limit (1.5 MiB by
// default) fails at once with etcd's reason, not after retries until the
// deadline.
func TestRequestTooLarge(t *testing.T) {
	c := openT(t, server(t).Endpoints()).Conn()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	began := time.Now()
	_, err := c.Create(ctx, "/big", "item", make([]byte, 1600<<10), 0)
	if !errors.Is(err, rpctypes.ErrRequestTooLarge) || ctx.Err() != nil {
		t.Fatalf("1.6 MiB create: %v, want %v at once", err, rpctypes.ErrRequestTooLarge)
	}
	t.Logf("%v (after %v)", err, time.Since(began).Round(time.Millisecond))
}

// TestAuthTokenExpiry: a session outlives the token its password bought
// (etcd's simple tokens lapse when unused; 1 s here, 300 s by default):
// the holder keeps its lease and releases, a new contender waits and
// acquires.
func TestAuthTokenExpiry(t *testing.T) {
	srv := etcdtest.StartWith(t, etcdtest.Options{RootPassword: rootPW, AuthTokenTTL: time.Second})
	a := openT(t, srv.Endpoints(), etcd.WithTTL(5*time.Second), etcd.WithAuth("root", rootPW))
	b := openT(t, srv.Endpoints(), etcd.WithTTL(5*time.Second), etcd.WithAuth("root", rootPW))
	ctx := testCtx(t)
	ma, mb := baton.NewMutex(a, "/expiry/m"), baton.NewMutex(b, "/expiry/m")
	la, err := ma.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Let both sessions' tokens lapse: nothing here orders events, it
	// only lets time pass.
	<-time.After(2500 * time.Millisecond)
	got := make(chan error, 1)
	go func() {
		_, err := mb.Lock(ctx)
		got <- err
	}()
	// Count contenders on a client of its own, so the holder's client
	// does not refresh its token before its Unlock.
	obs, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second,
		Username: "root", Password: rootPW, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	if !await.Within(10*time.Second, func() bool {
		r, err := obs.Get(ctx, "/expiry/m/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && r.Count == 2
	}) {
		t.Fatal("the contender never queued")
	}
	select {
	case <-la.Done():
		t.Fatalf("holder lost the lock: %v", la.Err())
	default:
	}
	if err := ma.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := mb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
