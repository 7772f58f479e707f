package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/testca"
)

// copyFile copies src over dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestServeSIGHUPReloadsTLS: `baton serve` with TLS and client
// certificates, its certificate, key and client CA files replaced by ones
// of another CA, reloads them on SIGHUP (the CA change restarts etcd on
// the same port): clients of the new CA get in, clients of the old one
// no longer do. A certificate file that does not load on SIGHUP is
// reported on stderr and serve keeps running.
func TestServeSIGHUPReloadsTLS(t *testing.T) {
	t.Parallel()
	caA, caB := testca.New(t, "ca-a"), testca.New(t, "ca-b")
	srvA, srvB := caA.Issue(t, "server"), caB.Issue(t, "server")
	cliA, cliB := caA.Issue(t, "client-a"), caB.Issue(t, "client-b")
	dir := t.TempDir()
	cert, key, clientCA := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "client-ca.pem")
	copyFile(t, srvA.CertFile, cert)
	copyFile(t, srvA.KeyFile, key)
	copyFile(t, caA.CertFile, clientCA)
	srv := start(t, env(), "serve", "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0",
		"--tls-cert", cert, "--tls-key", key, "--tls-client-ca", clientCA)
	srv.waitOutput("Ctrl-C stops\n", 60*time.Second)
	m := regexp.MustCompile(`etcd serving on (127\.0\.0\.1:\d+) `).FindStringSubmatch(srv.stdout.String())
	if m == nil {
		t.Fatalf("serve printed %q", srv.stdout.String())
	}
	url := "etcds://" + m[1]
	lock := func(ca *testca.CA, c testca.Leaf) (string, int) {
		out, stderr, code := run(t, env(), "lock", "--store", url, "--dial-timeout", "10s",
			"--tls-ca", ca.CertFile, "--tls-cert", c.CertFile, "--tls-key", c.KeyFile, "/reload", "--", "echo", "held")
		if code == 0 && out != "held\n" {
			t.Fatalf("lock ran, printed %q", out)
		}
		return stderr, code
	}
	if stderr, code := lock(caA, cliA); code != 0 {
		t.Fatalf("CA A client before the reload: exit %d, %q", code, stderr)
	}
	if _, code := lock(caB, cliB); code == 0 {
		t.Fatal("CA B client got in before the reload")
	}

	copyFile(t, srvB.CertFile, cert)
	copyFile(t, srvB.KeyFile, key)
	copyFile(t, caB.CertFile, clientCA)
	srv.signal(syscall.SIGHUP)
	srv.waitOutput("with the new CA\n", 60*time.Second)
	if !strings.Contains(srv.stdout.String(), `TLS reloaded: client certificate "server" valid until`) {
		t.Errorf("serve printed %q", srv.stdout.String())
	}
	if stderr, code := lock(caB, cliB); code != 0 {
		t.Fatalf("CA B client after the reload: exit %d, %q", code, stderr)
	}
	if _, code := lock(caA, cliA); code == 0 {
		t.Fatal("CA A client still got in after the reload")
	}

	if err := os.WriteFile(cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.signal(syscall.SIGHUP)
	if !await.Within(30*time.Second, func() bool {
		return strings.Contains(srv.stderr.String(), "baton: SIGHUP: client certificate "+cert)
	}) {
		t.Fatalf("no report of the broken certificate: stderr %q", srv.stderr.String())
	}
	copyFile(t, srvB.CertFile, cert)
	if stderr, code := lock(caB, cliB); code != 0 {
		t.Fatalf("after a failed reload and the file restored: exit %d, %q", code, stderr)
	}
	srv.signal(syscall.SIGTERM)
	if code := srv.wait(30 * time.Second); code != 0 {
		t.Errorf("serve exit %d: %q", code, srv.stderr.String())
	}
}
