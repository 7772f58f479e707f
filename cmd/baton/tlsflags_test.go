package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestTLSFlagsUsage: TLS files with a store that is not TLS, or files
// that cannot be used, are usage errors found before any dialing; so are
// serve's security flags without what they need.
func TestTLSFlagsUsage(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing-ca.pem")
	for _, tc := range []struct {
		env    map[string]string
		args   []string
		stderr string
	}{
		{nil, []string{"lock", "--store", "etcd://127.0.0.1:1", "--tls-ca", "ca.pem", "x", "--", "true"}, "need a TLS store: zks://, etcds:// or rediss://, not etcd://"},
		{map[string]string{"BATON_TLS_CERT": "c.pem"}, []string{"status", "--store", "zk://127.0.0.1:1", "/x"}, "not zk://"},
		{nil, []string{"status", "--store", "redis://:hunter2@127.0.0.1:1", "--tls-key", "k.pem", "x"}, "not redis://"},
		{nil, []string{"queue", "len", "--store", "redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--tls-ca", "ca.pem", "q"}, "not redlock://"},
		{nil, []string{"bench", "--store", "etcd://127.0.0.1:1", "--tls-ca", "ca.pem"}, "not etcd://"},
		{map[string]string{"BATON_STORE": "etcds://root:hunter2@127.0.0.1:1", "BATON_TLS_CA": missing}, []string{"lock", "x", "--", "true"}, missing},
		{nil, []string{"lock", "--store", "etcds://127.0.0.1:1", "--tls-cert", "c.pem", "x", "--", "true"}, "--tls-key"},
		{nil, []string{"status", "--store", "rediss://:hunter2@127.0.0.1:1", "--tls-ca", missing, "x"}, missing},
		{nil, []string{"serve", "--auth"}, "$BATON_AUTH_PASSWORD"},
		{nil, []string{"serve", "--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
		{nil, []string{"serve", "--tls-client-ca", "ca.pem"}, "--tls-client-ca needs --tls-cert"},
		{nil, []string{"serve", "--tls-cert", missing, "--tls-key", missing}, missing},
	} {
		var out, errb bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return tc.env[k] }}
		code := m.Exit(m.Run(context.Background(), tc.args))
		if code != exitUsage || !strings.Contains(errb.String(), tc.stderr) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("baton %q (env %v): exit %d stderr %q, want %d and one line with %q", tc.args, tc.env, code, errb.String(), exitUsage, tc.stderr)
		}
		if strings.Contains(errb.String()+out.String(), "hunter2") {
			t.Errorf("baton %q shows the password: %q", tc.args, errb.String())
		}
	}
}
