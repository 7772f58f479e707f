package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/testca"
)

func TestTLSFilesConfig(t *testing.T) {
	ca := testca.New(t, "store")
	leaf := ca.Issue(t, "client")
	cfg, err := TLSFiles{CA: ca.CertFile, Cert: leaf.CertFile, Key: leaf.KeyFile}.Config("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs == nil || len(cfg.Certificates) != 1 || cfg.ServerName != "127.0.0.1" {
		t.Fatalf("config %+v lacks the CA, the certificate or the server name", cfg)
	}
	if cfg, err := (TLSFiles{}).Config(""); err != nil || cfg.RootCAs != nil {
		t.Fatalf("no files: %v, %v (want the system roots)", cfg, err)
	}

	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	// A file that is not PEM: the error names it but never quotes it.
	if err := os.WriteFile(junk, []byte("SECRET-CONTENTS"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		f    TLSFiles
		want string
	}{
		{TLSFiles{CA: missing}, missing},
		{TLSFiles{CA: junk}, junk},
		{TLSFiles{Cert: leaf.CertFile}, "--tls-key"},
		{TLSFiles{Key: leaf.KeyFile}, "--tls-cert"},
		{TLSFiles{Cert: missing, Key: leaf.KeyFile}, missing},
		{TLSFiles{Cert: junk, Key: leaf.KeyFile}, junk},
		{TLSFiles{Cert: leaf.CertFile, Key: junk}, junk},
		{TLSFiles{Cert: leaf.CertFile, Key: ca.CertFile}, ca.CertFile},
	} {
		_, err := tc.f.Config("h")
		switch {
		case err == nil:
			t.Errorf("%+v: no error", tc.f)
		case !errors.Is(err, ErrBadTLS) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "\n"):
			t.Errorf("%+v: error %q: want one ErrBadTLS line naming %s, without the file's contents", tc.f, err, tc.want)
		}
	}
}

func TestCheckTLS(t *testing.T) {
	f := TLSFiles{CA: "ca.pem"}
	for raw, ok := range map[string]bool{
		"zks://h": true, "etcds://h": true, "rediss://h": true,
		"zk://h": false, "etcd://h": false, "redis://h": false, "redlock://a,b,c": false,
	} {
		u, err := Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := u.CheckTLS(f); (err == nil) != ok || (err != nil && !errors.Is(err, ErrBadTLS)) {
			t.Errorf("%s with a CA file: %v", raw, err)
		}
		if err := u.CheckTLS(TLSFiles{}); err != nil {
			t.Errorf("%s without TLS files: %v", raw, err)
		}
	}
}
