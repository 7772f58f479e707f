package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/internal/zktest"
)

// TestOnePrefix: failing invocations of every kind (bad flags, bad store,
// bad names, stores down, permission denied, not acquired, CMD not found,
// a lock lost) print lines that each carry exactly one "baton: " prefix,
// whatever the library's errors (which start "baton: " too) say inside.
func TestOnePrefix(t *testing.T) {
	t.Parallel()
	dead := closedPort(t)
	etcdURL := "etcd://" + sharedEtcd(t)
	zkURL := "zk://" + zktest.Shared(t).Addr()
	perm := redistest.Start(t, redistest.Config{Users: []string{"nokeys on >Nokeys-pw ~other:* &* +@all"}})
	permURL := "redis://nokeys:Nokeys-pw@" + perm.Addr()

	// A held lock, for --try and --timeout to fail on.
	// It holds until the test's cleanup kills it, after the subtests,
	// however long they wait for their turn to run.
	holder := start(t, env(), "lock", "--store", etcdURL, "/prefix/held")
	holder.waitOutput("BATON_LOCK=/prefix/held BATON_TOKEN=", 30*time.Second)

	for _, tc := range []struct {
		name string
		code int
		args []string
	}{
		{"bad flag", exitUsage, []string{"lock", "--nope", "x"}},
		{"unknown command", exitUsage, []string{"frobnicate"}},
		{"empty store", exitUsage, []string{"lock", "--store", "", "x", "--", "true"}},
		{"bad scheme", exitUsage, []string{"lock", "--store", "consul://h:1", "x", "--", "true"}},
		{"bad ttl", exitUsage, []string{"lock", "--store", etcdURL, "--ttl", "0", "x", "--", "true"}},
		{"bad name", exitUsage, []string{"lock", "--store", zkURL, "/a/../b", "--", "true"}},
		{"missing -n", exitUsage, []string{"semaphore", "--store", etcdURL, "/prefix/s", "--", "true"}},
		{"queue on redis", exitUsage, []string{"queue", "len", "--store", "redis://" + dead, "/prefix/q"}},
		{"etcd down", exitFailure, []string{"lock", "--store", "etcd://" + dead, "--dial-timeout", "1s", "x", "--", "true"}},
		{"zk down", exitFailure, []string{"lock", "--store", "zk://" + dead, "--dial-timeout", "1s", "x", "--", "true"}},
		{"redis down", exitFailure, []string{"lock", "--store", "redis://" + dead, "--dial-timeout", "1s", "x", "--", "true"}},
		{"permission denied", exitFailure, []string{"lock", "--store", permURL, "x", "--", "true"}},
		{"not free", exitTimeout, []string{"lock", "--store", etcdURL, "--try", "/prefix/held", "--", "true"}},
		{"timeout", exitTimeout, []string{"lock", "--store", etcdURL, "--timeout", "300ms", "/prefix/held", "--", "true"}},
		{"no such CMD", 127, []string{"lock", "--store", etcdURL, "/prefix/free", "--", "/nonexistent/cmd"}},
		{"barrier not set", exitNotSet, []string{"barrier", "wait", "--store", zkURL, "/prefix/never"}},
		{"redlock down", exitFailure, []string{"lock", "--store", "redlock://" + dead + "," + closedPort(t) + "," + closedPort(t), "--dial-timeout", "1s", "x", "--", "true"}},
		{"nested", exitUsage, []string{"lock", "--store", etcdURL, "/prefix/outer", "--", "sh", "-c", "BATON_LOCK=/prefix/n " + batonBin + " lock --store " + etcdURL + " /prefix/n -- true"}},
		{"credentials ignored (a warning)", 0, []string{"lock", "--store", "etcd://u:Pw-x@" + sharedEtcd(t), "/prefix/w", "--", "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, stderr, code := run(t, env(), tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			checkPrefixes(t, stderr)
		})
	}
	// The holder is killed by the test's cleanup, after the subtests.
}

// checkPrefixes asserts that stderr has lines and that each starts with
// one "baton: " and has no other.
func checkPrefixes(t *testing.T, stderr string) {
	t.Helper()
	if stderr == "" {
		t.Error("nothing on stderr")
	}
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if !strings.HasPrefix(line, "baton: ") || strings.Count(line, "baton:") != 1 {
			t.Errorf("stderr line %q: want exactly one \"baton: \" prefix", line)
		}
	}
}

// TestErrLineKeepsNames: errLine drops the "baton: " that starts the
// library's error texts wherever one is wrapped, and nothing of what a
// message quotes: a lock named jobs/baton was printed as "lock /jobs/not
// free", a CMD named my-baton as "cannot run my-exec: …".
func TestErrLineKeepsNames(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("lock /jobs/baton: not free (--try): %w", baton.ErrLocked), "lock /jobs/baton: not free (--try): already held by another"},
		{errors.New("lock /jobs/baton: not acquired within 1s"), "lock /jobs/baton: not acquired within 1s"},
		{fmt.Errorf("cannot run my-baton: %w", errors.New(`exec: "my-baton": executable file not found in $PATH`)), `cannot run my-baton: exec: "my-baton": executable file not found in $PATH`},
		{fmt.Errorf("%w: %w", baton.ErrLost, baton.ErrRevoked), "lock lost: node removed by another"},
		{fmt.Errorf("lock /x lost while CMD ran (%w); CMD stopped", baton.ErrLost), "lock /x lost while CMD ran (lock lost); CMD stopped"},
		{errors.Join(errors.New("a"), baton.ErrLocked), "a; already held by another"},
	} {
		if got := errLine(tc.err); got != tc.want {
			t.Errorf("errLine(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
