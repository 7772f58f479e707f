package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testca"
	"github.com/batonhq/baton/internal/zktest"
)

// TestZooKeeperSecure: baton lock over zks:// with digest credentials and
// a client certificate holds a lock that strangers, with other
// credentials or none, can neither break nor join; they fail with one
// clear line, passwords never shown.
func TestZooKeeperSecure(t *testing.T) {
	ca := testca.New(t, "baton cli test CA")
	srvCert, cli := ca.Issue(t, "zookeeper"), ca.Issue(t, "baton")
	srv := zktest.Start(t, zktest.WithTLS(zktest.TLS{Cert: srvCert.CertFile, Key: srvCert.KeyFile, CA: ca.CertFile, ClientAuth: "need"}))
	tlsFlags := []string{"--tls-ca", ca.CertFile, "--tls-cert", cli.CertFile, "--tls-key", cli.KeyFile}
	store := func(cred string) []string {
		return append([]string{"--store", "zks://" + cred + srv.SecureAddr()}, tlsFlags...)
	}
	release := filepath.Join(t.TempDir(), "release")
	const name = "/secure/nightly"

	// The holder waits (bounded) for the test to let it go.
	holder := start(t, env(), append(append([]string{"lock"}, store("alice:pw-alice@")...), name, "--",
		"sh", "-c", `echo "held $BATON_TOKEN"; i=0; while [ ! -e "$1" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`, "sh", release)...)
	holder.waitOutput("held ", 30*time.Second)

	for _, cred := range []string{"mallory:pw-mallory@", ""} {
		_, stderr, code := run(t, env(), append(append([]string{"lock", "--timeout", "5s"}, store(cred)...), name, "--", "true")...)
		if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "ACL") {
			t.Errorf("stranger %q: exit %d stderr %q, want 1 and one line about the ACL", cred, code, stderr)
		}
		if strings.Contains(stderr, "pw-") {
			t.Errorf("stranger %q: the password shows: %q", cred, stderr)
		}
		t.Logf("stranger %q: %s", cred, strings.TrimSpace(stderr))
		// Reading is open to all.
		out, stderr, code := run(t, env(), append(append([]string{"status"}, store(cred)...), name)...)
		if code != 0 || !strings.Contains(out, "holder") {
			t.Errorf("stranger %q: status exit %d stdout %q stderr %q", cred, code, out, stderr)
		}
	}
	select {
	case <-holder.done:
		t.Fatalf("the holder ended while strangers tried: exit %d, stderr %q", holder.code, holder.stderr.String())
	default:
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := holder.wait(30 * time.Second); code != 0 {
		t.Fatalf("holder exit %d, stderr %q", code, holder.stderr.String())
	}
	// The same identity takes it again.
	if _, stderr, code := run(t, env(), append(append([]string{"lock", "--timeout", "10s"}, store("alice:pw-alice@")...), name, "--", "true")...); code != 0 {
		t.Fatalf("alice again: exit %d stderr %q", code, stderr)
	}

	// Plain zk:// with credentials: alice's queue items are hers to take.
	plain := func(cred string) []string { return []string{"--store", "zk://" + cred + srv.Addr()} }
	if _, stderr, code := run(t, env(), append(append([]string{"queue", "put"}, plain("alice:pw-alice@")...), "/plain/q", "v1")...); code != 0 {
		t.Fatalf("alice put: exit %d stderr %q", code, stderr)
	}
	_, stderr, code := run(t, env(), append(append([]string{"queue", "take", "--timeout", "5s"}, plain("mallory:pw-mallory@")...), "/plain/q")...)
	t.Logf("mallory's take: exit %d: %s", code, strings.TrimSpace(stderr))
	if code != 1 || !strings.Contains(stderr, "ACL") || strings.Contains(stderr, "pw-") {
		t.Errorf("mallory's take: exit %d stderr %q, want 1 and one line about the ACL", code, stderr)
	}
	out, stderr, code := run(t, env(), append(append([]string{"queue", "take", "--timeout", "5s"}, plain("alice:pw-alice@")...), "/plain/q")...)
	if code != 0 || strings.TrimSpace(out) != "v1" {
		t.Fatalf("alice's take: exit %d stdout %q stderr %q", code, out, stderr)
	}
}
