package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLockDelayFlag: `baton lock --lock-delay D`: after a holder killed
// with SIGKILL (its session left to expire, the lock never released) the
// next holder runs CMD no sooner than D after it started waiting; after a
// clean release there is no delay (a --timeout far below D is met).
func TestLockDelayFlag(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, _ testStore, e []string) {
		const delay = 4 * time.Second // over the 2 s TTL: a wait for the expiry alone is shorter
		holder := start(t, e, "lock", "--ttl", "2s", "--lock-delay", delay.String(), "/ld", "--", "sh", "-c", "echo ready; exec sleep 60")
		holder.waitOutput("ready", 10*time.Second)
		holder.signal(syscall.SIGKILL)
		holder.wait(10 * time.Second)
		began := time.Now()
		if _, stderr, code := run(t, e, "lock", "--ttl", "2s", "--lock-delay", delay.String(), "/ld", "--", "true"); code != 0 {
			t.Fatalf("next holder: exit %d %q", code, stderr)
		}
		if waited := time.Since(began); waited < delay {
			t.Fatalf("the next holder ran CMD %v after it began waiting, before the lock-delay of %v", waited, delay)
		}
		for range 2 {
			if _, stderr, code := run(t, e, "lock", "--lock-delay", "1h", "--timeout", "10s", "/ld2", "--", "true"); code != 0 {
				t.Fatalf("after a clean release: exit %d %q", code, stderr)
			}
		}
	})
	_, stderr, code := run(t, env("BATON_STORE=redis://127.0.0.1:1"), "lock", "--lock-delay", "1s", "x")
	if code != exitUsage || !strings.Contains(stderr, "lock --lock-delay needs zk:// or etcd://") {
		t.Fatalf("--lock-delay on redis: exit %d %q", code, stderr)
	}
}
