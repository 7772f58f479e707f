package main

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testca"
)

// TestPostgresTLSAndPassword: a store over TLS whose certificate baton
// checks (libpq's sslmode=verify-full and sslrootcert), as a user with a
// password, given in the URL or in PGPASSWORD as libpq users give it. A
// certificate from another CA, a wrong password, or a URL without TLS for
// a user the server admits over TLS only, fails with exit 1 and one line
// that says why; the password is never printed.
func TestPostgresTLSAndPassword(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	ca := testca.New(t, "pg")
	leaf := ca.IssueFor(t, "localhost", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	const pw = "s3cret-pw"
	srv.Secure(t, leaf.CertFile, leaf.KeyFile, "app", pw)
	other := testca.New(t, "other")
	store := func(userinfo, ca, mode string) string {
		return fmt.Sprintf("postgres://%s@%s/postgres?sslmode=%s&sslrootcert=%s&schema=tls", userinfo, srv.Addr(), mode, url.QueryEscape(ca))
	}
	lock := func(environ []string, u string) (string, string, int) {
		return run(t, environ, "lock", "--try", "--store", u, "tls/x", "--", "sh", "-c", "echo $BATON_TOKEN")
	}
	for _, c := range []struct {
		name    string
		environ []string
		url     string
	}{
		{"password in the URL", env(), store("app:"+url.QueryEscape(pw), ca.CertFile, "verify-full")},
		{"PGPASSWORD", env("PGPASSWORD=" + pw), store("app", ca.CertFile, "verify-full")},
	} {
		out, stderr, code := lock(c.environ, c.url)
		if code != 0 || strings.TrimSpace(out) == "" {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", c.name, code, out, stderr)
		}
	}
	out, stderr, code := run(t, env(), "status", "--store", store("app:"+pw, ca.CertFile, "verify-full"), "tls/x")
	if code != 0 || strings.Contains(out+stderr, pw) {
		t.Fatalf("status: exit %d, stdout %q, stderr %q: want 0 and no password", code, out, stderr)
	}
	for _, c := range []struct {
		name, url, why string
	}{
		{"a certificate from another CA", store("app:"+pw, other.CertFile, "verify-full"), "certificate"},
		{"a wrong password", store("app:wrong-"+pw, ca.CertFile, "verify-full"), "password authentication failed"},
		{"no TLS for a TLS-only user", store("app:"+pw, ca.CertFile, "disable"), "pg_hba.conf rejects connection"},
	} {
		out, stderr, code := lock(env(), c.url)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 1 || out != "" || len(lines) != 1 || !strings.Contains(stderr, c.why) || strings.Contains(stderr, pw) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1, no CMD, one line saying %q without the password", c.name, code, out, stderr, c.why)
		}
	}
}
