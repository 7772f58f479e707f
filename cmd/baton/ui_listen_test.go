package main

import (
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cmd/baton/internal/ui"
	"github.com/batonhq/baton/internal/testca"
)

// TestUIAdminNonLoopback: --admin on an address that is not loopback is
// refused (exit 2) without HTTPS; with --listen-cert and --listen-key the
// page is served over HTTPS there, admin on. Loopback needs no TLS.
func TestUIAdminNonLoopback(t *testing.T) {
	t.Parallel()
	e, _ := etcdEnv(t)
	e = append(e, "BATON_UI_TOKEN=a-token-for-the-test")
	for _, listen := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		_, stderr, code := run(t, e, "ui", "--admin", "--listen", listen)
		if code != 2 || !strings.Contains(stderr, "not loopback") || !strings.Contains(stderr, "--listen-cert") {
			t.Errorf("--admin --listen %s: exit %d, stderr %q; want 2 and the HTTPS hint", listen, code, stderr)
		}
	}
	if _, stderr, code := run(t, e, "ui", "--listen-cert", "x.pem"); code != 2 || !strings.Contains(stderr, "go together") {
		t.Errorf("--listen-cert alone: exit %d, stderr %q", code, stderr)
	}
	// Files that do not load are bad usage too, as serve's --tls-cert.
	missing := filepath.Join(t.TempDir(), "missing.pem")
	if _, stderr, code := run(t, e, "ui", "--listen-cert", missing, "--listen-key", missing); code != 2 || !strings.Contains(stderr, "missing.pem") {
		t.Errorf("--listen-cert that does not exist: exit %d, stderr %q; want 2", code, stderr)
	}
	for _, listen := range []string{"127.0.0.1", "[::1]", "localhost"} {
		if !loopback(listen + ":8080") {
			t.Errorf("%s is loopback", listen)
		}
	}

	ca := testca.New(t, "ui")
	leaf := ca.Issue(t, "ui")
	p := start(t, e, "ui", "--prefix", "uitls", "--admin", "--listen", "0.0.0.0:0", "--listen-cert", leaf.CertFile, "--listen-key", leaf.KeyFile)
	p.waitOutput("Ctrl-C stops", 30*time.Second)
	out := p.stdout.String()
	i := strings.Index(out, "https://")
	if i < 0 {
		t.Fatalf("no https URL in %q", out)
	}
	_, port, err := net.SplitHostPort(strings.TrimSuffix(strings.Fields(out[i+len("https://"):])[0], "/"))
	if err != nil {
		t.Fatal(err)
	}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: ca.ClientConfig(t, nil)}}
	resp, err := cl.Get("https://127.0.0.1:" + port + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v ui.View
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || !v.Admin {
		t.Fatalf("state over HTTPS: %v, admin %v", err, v.Admin)
	}
	// Plain HTTP gets no page (Go's TLS server answers 400).
	if r, err := http.Get("http://127.0.0.1:" + port + "/api/state"); err == nil {
		r.Body.Close()
		if r.StatusCode == http.StatusOK {
			t.Fatal("the HTTPS page answered plain HTTP")
		}
	}
	p.signal(2)
}
