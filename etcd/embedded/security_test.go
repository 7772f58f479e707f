package embedded_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/batonhq/baton/etcd/embedded"
	"github.com/batonhq/baton/internal/testca"
)

// TestTLSAndAuth: a server with TLS, client certificates and
// authentication serves a client that has all three, refuses a wrong
// password, and keeps its root password across a restart; a new start on
// the data dir with another password fails without showing either.
func TestTLSAndAuth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ca := testca.New(t, "embedded")
	srvCert, cliCert := ca.Issue(t, "server"), ca.Issue(t, "client")
	const pw = "s3cret-root-pw"
	dir := t.TempDir()
	cfg := embedded.Config{DataDir: dir, Fast: true, CertFile: srvCert.CertFile, KeyFile: srvCert.KeyFile,
		ClientCAFile: ca.CertFile, RootPassword: pw}
	s, err := embedded.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if ep := s.Endpoints()[0]; !strings.HasPrefix(ep, "https://") {
		t.Fatalf("endpoint %s is not https", ep)
	}
	if !s.AuthEnabled() {
		t.Fatal("auth is off")
	}
	dial := func(user, pass string, leaf *testca.Leaf) (*clientv3.Client, error) {
		return clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), DialTimeout: 5 * time.Second,
			TLS: ca.ClientConfig(t, leaf), Username: user, Password: pass, Logger: zap.NewNop()})
	}
	cli, err := dial(embedded.RootUser, pw, &cliCert)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := dial(embedded.RootUser, "wrong", &cliCert); !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Fatalf("wrong password: %v, want %v", err, rpctypes.ErrAuthFailed)
	}
	// The same password again on restart: nothing to do, it serves.
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := cli.Get(ctx, "k"); err != nil || len(r.Kvs) != 1 {
		t.Fatalf("after restart: %v %v", r, err)
	}
	s.Stop()
	other := cfg
	other.RootPassword = "another-password"
	if s2, err := embedded.Start(ctx, other); err == nil {
		_ = s2.Close()
		t.Fatal("started with another root password")
	} else if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "another-password") {
		t.Fatalf("error shows a password: %v", err)
	} else {
		t.Logf("another password: %v", err)
	}
}
