package main

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testca"
)

// TestServeTLSAuth: `baton serve` with TLS, client certificates and auth,
// driven by `baton lock` over etcds:// with the right credentials and
// certificate (it runs CMD), a wrong password, no password and a
// certificate of another CA (each fails at once, in one line). No
// password shows in any output.
func TestServeTLSAuth(t *testing.T) {
	t.Parallel()
	const pw = "Serve-R00t-pw"
	ca, stranger := testca.New(t, "serve"), testca.New(t, "stranger")
	srvCert, cli, bad := ca.Issue(t, "server"), ca.Issue(t, "baton-client"), stranger.Issue(t, "baton-client")
	srv := start(t, env("BATON_AUTH_PASSWORD="+pw), "serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--tls-cert", srvCert.CertFile, "--tls-key", srvCert.KeyFile, "--tls-client-ca", ca.CertFile, "--auth")
	srv.waitOutput("Ctrl-C stops\n", 60*time.Second)
	m := regexp.MustCompile(`etcd serving on (127\.0\.0\.1:\d+) .*TLS with client certificates, auth on.*--store etcds://root:\$BATON_AUTH_PASSWORD@`).FindStringSubmatch(srv.stdout.String())
	if m == nil {
		t.Fatalf("serve printed %q", srv.stdout.String())
	}
	addr := m[1]
	tlsFlags := []string{"--tls-ca", ca.CertFile, "--tls-cert", cli.CertFile, "--tls-key", cli.KeyFile}
	lock := func(url string, flags []string, extraEnv ...string) *proc {
		args := append([]string{"lock", "--store", url, "--dial-timeout", "20s"}, flags...)
		if strings.HasPrefix(url, "etcd://") {
			args[4] = "2s" // waits for the dial timeout: make it short
		}
		return start(t, env(extraEnv...), append(args, "/secure", "--", "echo", "held")...)
	}
	ok := lock("etcds://root:"+pw+"@"+addr, tlsFlags)
	wrong := lock("etcds://root:not-"+pw+"@"+addr, tlsFlags)
	// No password: etcd takes the client certificate's common name as the
	// user, and baton-client is none. The TLS files come from the
	// environment this time.
	anonymous := lock("etcds://"+addr, nil, "BATON_TLS_CA="+ca.CertFile, "BATON_TLS_CERT="+cli.CertFile, "BATON_TLS_KEY="+cli.KeyFile)
	strangerCert := lock("etcds://root:"+pw+"@"+addr, []string{"--tls-ca", ca.CertFile, "--tls-cert", bad.CertFile, "--tls-key", bad.KeyFile})
	plain := lock("etcd://root:"+pw+"@"+addr, nil)

	if code := ok.wait(60 * time.Second); code != 0 || ok.stdout.String() != "held\n" {
		t.Errorf("lock with the right credentials: exit %d, stdout %q, stderr %q", code, ok.stdout.String(), ok.stderr.String())
	}
	for _, tc := range []struct {
		name string
		p    *proc
		want string
	}{
		{"wrong password", wrong, "authentication to [https://" + addr + "] as user root failed"},
		{"no password", anonymous, "not allowed (check the credentials and the user's roles): permission denied: etcdserver: permission denied"},
		{"certificate of another CA", strangerCert, "refused the TLS connection"},
		{"plain etcd:// to a TLS server", plain, "cannot reach store etcd://root:xxxxx@" + addr + " within 2s: etcd: dial [http://" + addr + "] as user root: context deadline exceeded (last connection error: the server at " + addr + " closed the connection before answering (is it an etcd client port, and does it want TLS?)"},
	} {
		code := tc.p.wait(60 * time.Second)
		checkOneLine(t, tc.name, tc.p.stderr.String(), code, tc.want)
		if tc.p.stdout.String() != "" {
			t.Errorf("%s: ran CMD: %q", tc.name, tc.p.stdout.String())
		}
		t.Logf("%s: %s", tc.name, strings.TrimSpace(tc.p.stderr.String()))
	}
	srv.signal(syscall.SIGTERM)
	if code := srv.wait(20 * time.Second); code != 0 {
		t.Errorf("serve exit %d: %q", code, srv.stderr.String())
	}
	for _, p := range []*proc{srv, ok, wrong, anonymous, strangerCert, plain} {
		if out := p.stdout.String() + p.stderr.String(); strings.Contains(out, pw) {
			t.Errorf("baton %v shows the password: %q", p.cmd.Args[1:], out)
		}
	}
}
