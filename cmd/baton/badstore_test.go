package main

import (
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/proxy"
)

// closedPort returns a loopback address nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// checkOneLine asserts a clean failure: non-zero exit, one line on stderr
// starting "baton: ", no stack trace.
func checkOneLine(t *testing.T, what, stderr string, code int, want string) {
	t.Helper()
	if code == 0 || code == 75 || code == 76 {
		t.Errorf("%s: exit %d", what, code)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "baton: ") ||
		strings.Contains(stderr, "goroutine") || !strings.Contains(stderr, want) {
		t.Errorf("%s: stderr %q, want one line containing %q", what, stderr, want)
	}
}

func TestBadStores(t *testing.T) {
	t.Parallel()
	dead := closedPort(t)
	// A proxy that accepts connections and never answers: the hang case.
	hole := proxy.Start(t, closedPort(t))
	hole.Blackhole()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"refused", []string{"lock", "--store", "etcd://" + dead, "--dial-timeout", "1s", "x", "--", "true"}, "cannot reach store etcd://" + dead + " within 1s: etcd: grant lease: context deadline exceeded (last connection error: dial tcp " + dead + ": connect: connection refused)"},
		{"refused with credentials", []string{"lock", "--store", "etcd://u:hunter2@" + dead, "--dial-timeout", "1s", "x", "--", "true"}, "(last connection error: dial tcp " + dead + ": connect: connection refused)"},
		{"blackholed", []string{"status", "--store", "etcd://" + hole.Addr(), "--dial-timeout", "1s", "x"}, "cannot reach store"},
		{"zk refused", []string{"lock", "--store", "zk://" + dead, "--dial-timeout", "1s", "/x", "--", "true"}, "cannot reach store zk://" + dead},
		{"zk blackholed", []string{"status", "--store", "zk://" + hole.Addr(), "--dial-timeout", "1s", "/x"}, "cannot reach store"},
		{"redis blackholed", []string{"lock", "--store", "redis://:pw@" + hole.Addr(), "--dial-timeout", "1s", "x"}, "redis://:xxxxx@"},
		{"redlock refused", []string{"lock", "--store", "redlock://" + dead + "," + closedPort(t) + ",127.0.0.1:1", "--dial-timeout", "1s", "x"}, "cannot reach store redlock://"},
		{"zk bad name", []string{"lock", "--store", "zk://" + dead, "/a/../b"}, `invalid name "/a/../b": a ".." element`},
		{"zk empty element", []string{"status", "--store", "zk://" + dead, "/a//b"}, `invalid name "/a//b": an empty element`},
		{"env store", []string{"queue", "len", "--dial-timeout", "1s", "q"}, "cannot reach store"},
		{"bad scheme", []string{"lock", "--store", "consul://h:1", "x"}, "unknown scheme"},
		{"bad port", []string{"lock", "--store", "etcd://h:99999", "x"}, "not a port"},
		{"password hidden", []string{"lock", "--store", "redis://u:hunter2@h:x", "x"}, "xxxxx"},
		{"no name", []string{"lock", "--store", "etcd://" + dead}, "missing NAME"},
		{"bad name", []string{"lock", "--store", "etcd://" + dead, "a\nb"}, `invalid name "a\nb": U+000A is a character ZooKeeper refuses`},
		{"stray args", []string{"lock", "--store", "etcd://" + dead, "x", "echo"}, "put CMD after --"},
		{"empty cmd", []string{"lock", "--store", "etcd://" + dead, "x", "--"}, "no CMD"},
		{"bad flag", []string{"lock", "--nope", "x"}, "flag provided but not defined"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"redis recipe", []string{"queue", "len", "--store", "redis://" + dead, "--dial-timeout", "1s", "q"}, "queue needs zk:// or etcd://"},
		// Refused before anything starts: no metrics server announced first.
		{"redis recipe with metrics", []string{"elect", "--store", "redis://" + dead, "--metrics-addr", "127.0.0.1:0", "e", "--", "true"}, "elect needs zk:// or etcd://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			_, stderr, code := run(t, env("BATON_STORE=etcd://"+dead), tc.args...)
			checkOneLine(t, tc.name, stderr, code, tc.want)
			if strings.Contains(stderr, "hunter2") {
				t.Errorf("password shown: %q", stderr)
			}
			// Never a hang: bounded by the dial timeout plus process start.
			if d := time.Since(began); d > 8*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}
