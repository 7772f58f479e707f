package main

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/redistest"
)

// TestRedisPermission: a Redis user that may connect but not touch the
// lock's keys gets what zk and etcd users refused by an ACL get: exit 1,
// one line saying it is not allowed, with Redis's own reason, CMD not
// run, and no password shown.
func TestRedisPermission(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Config{Users: []string{"nokeys on >Nokeys-pw ~other:* &* +@all"}})
	url := "redis://nokeys:Nokeys-pw@" + srv.Addr()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"lock", []string{"lock", "--store", url, "x", "--", "echo", "ran"}},
		{"lock --try", []string{"lock", "--try", "--store", url, "x", "--", "echo", "ran"}},
		{"redlock", []string{"lock", "--store", "redlock://nokeys:Nokeys-pw@" + srv.Addr(), "x", "--", "echo", "ran"}},
		{"status", []string{"status", "--store", url, "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := run(t, env(), tc.args...)
			checkOneLine(t, tc.name, stderr, code, "not allowed (check the Redis user's ACL")
			if code != exitFailure || !strings.Contains(stderr, "permission denied: NOPERM") {
				t.Errorf("%s: exit %d stderr %q, want %d and Redis's NOPERM", tc.name, code, stderr, exitFailure)
			}
			if strings.Contains(stdout, "ran") || strings.Contains(stdout+stderr, "Nokeys-pw") {
				t.Errorf("%s: stdout %q stderr %q", tc.name, stdout, stderr)
			}
		})
	}
}
