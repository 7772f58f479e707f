package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLockMany: `baton lock NAME NAME… -- CMD` holds every NAME at once
// (BATON_LOCK in lock order, BATON_TOKENS one token per name); a second
// command over an overlapping set given in another order waits (exit 75
// at its timeout) and takes nothing; with --try it exits 75 at once and
// takes nothing, and succeeds once every NAME is free.
func TestLockMany(t *testing.T) {
	t.Parallel()
	eachStore(t, false, func(t *testing.T, st testStore, e []string) {
		// Redlock does not count masters started within the last TTL
		// (10 s): the first lock may wait that long for them.
		holder := start(t, e, "lock", "/mb", "/ma", "--")
		holder.waitOutput("BATON_LOCK=/ma /mb", 30*time.Second)
		_, stderr, code := run(t, e, "lock", "--timeout", "300ms", "/mc", "/mb", "--", "true")
		if code != exitTimeout || !strings.Contains(stderr, "not acquired within") {
			t.Fatalf("overlapping set while held: exit %d %q", code, stderr)
		}
		// /mc was given back: a lock on it alone is free.
		if _, stderr, code := run(t, e, "lock", "--try", "/mc", "--", "true"); code != 0 {
			t.Fatalf("/mc after the timed-out multi-lock: exit %d %q", code, stderr)
		}
		// --try over the same overlapping set: exit 75 at once, CMD not
		// run, /mc given back again.
		_, stderr, code = run(t, e, "lock", "--try", "/mc", "/mb", "--", "false")
		if code != exitTimeout || !strings.Contains(stderr, "not all free (--try)") {
			t.Fatalf("--try over an overlapping set while held: exit %d %q", code, stderr)
		}
		if _, stderr, code := run(t, e, "lock", "--try", "/mc", "--", "true"); code != 0 {
			t.Fatalf("/mc after the refused --try: exit %d %q", code, stderr)
		}
		holder.signal(syscall.SIGTERM)
		if code := holder.wait(10 * time.Second); code != 0 {
			t.Fatalf("holder exit %d", code)
		}
		stdout, stderr, code := run(t, e, "lock", "/mc", "/mb", "--", "sh", "-c", `echo "$BATON_LOCK|$BATON_TOKENS"`)
		if code != 0 {
			t.Fatalf("multi-lock: exit %d %q", code, stderr)
		}
		lock, tokens, _ := strings.Cut(strings.TrimSpace(stdout), "|")
		if lock != "/mb /mc" || len(strings.Fields(tokens)) != 2 {
			t.Fatalf("CMD saw BATON_LOCK=%q BATON_TOKENS=%q", lock, tokens)
		}
		if _, stderr, code := run(t, e, "lock", "--try", "/ma", "/mb", "--", "true"); code != 0 {
			t.Fatalf("--try with both names free: exit %d %q", code, stderr)
		}
	})
}
