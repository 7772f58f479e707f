package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/internal/redistest"
)

// TestLockRedisRestartedEmpty is issue 26's scenario: `baton lock` holds
// a redis:// lock while its CMD works (a tick every 10 ms), a second
// `baton lock -v` waits, and the server is killed (kill -9) and restarted
// empty 0.2 s later. The waiter must not start its CMD while the holder's
// still runs (before the restart guard, it did 0.2 s after the restart);
// it says, with -v, that the guard holds the lock back; the holder's CMD
// is stopped and it exits 76.
func TestLockRedisRestartedEmpty(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Config{})
	e := env("BATON_STORE=redis://" + srv.Addr())
	const name = "restarted-empty"
	log := filepath.Join(t.TempDir(), "log")
	// -v: the holder says when it renews (every TTL/3, 1 s), and the kill
	// comes just after a renewal, so that the next one comes well after
	// the waiter could take the restarted server's free key.
	holder := start(t, e, "lock", "-v", "--ttl", "3s", name, "--", "sh", "-c", `while :; do echo tick >> "$0"; sleep 0.01; done`, log)
	proctest.WaitFile(t, log, "tick", 30*time.Second)
	waiter := start(t, e, "lock", "-v", "--ttl", "3s", name, "--", "sh", "-c", `echo acquired >> "$0"; sleep 0.2`, log)
	rc := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer rc.Close()
	await.Until(t, 10*time.Second, "the waiter in line", func() bool {
		n, _ := rc.ZCard(context.Background(), name+":queue").Result()
		return n == 1
	})
	renewals := func() int { return strings.Count(holder.stderr.String(), "renewed") }
	before := renewals()
	await.Until(t, 10*time.Second, "the holder's next renewal", func() bool { return renewals() > before })
	srv.Kill()
	time.Sleep(200 * time.Millisecond) // the outage's length
	srv.Restart()

	if code := waiter.wait(30 * time.Second); code != 0 {
		t.Fatalf("waiter exit %d: %q", code, waiter.stderr.String())
	}
	if code := holder.wait(20 * time.Second); code != exitLost {
		t.Fatalf("holder exit %d, want 76 (lost); stderr %q", code, holder.stderr.String())
	}
	checkStoppedBefore(t, log, "acquired")
	if w := waiter.stderr.String(); !strings.Contains(w, "restart guard") || !strings.Contains(w, "(run_id changed); locks on it wait until a TTL (3s) has passed") {
		t.Fatalf("the waiter's -v does not name the restart guard: %q", w)
	}
}

// TestLockRestartGuardTimeout: on servers up for less than the TTL,
// `baton lock --timeout` gives up saying that the restart guard held the
// lock back, and which server, and -v says so while it waits; on
// redis:// and redlock://.
func TestLockRestartGuardTimeout(t *testing.T) {
	for _, tc := range []struct {
		scheme  string
		servers int
		who     string
	}{{"redis", 1, "redis://"}, {"redlock", 3, "3 of 3 masters do not count toward a quorum yet: master redis://"}} {
		t.Run(tc.scheme, func(t *testing.T) {
			t.Parallel()
			var addrs []string
			for _, s := range redistest.StartN(t, tc.servers, redistest.Config{}) {
				addrs = append(addrs, s.Addr())
			}
			e := env("BATON_STORE=" + tc.scheme + "://" + strings.Join(addrs, ","))
			_, stderr, code := run(t, e, "lock", "-v", "--ttl", "20s", "--timeout", "1s", "guarded", "--", "true")
			if code != exitTimeout {
				t.Fatalf("exit %d, want 75; stderr %q", code, stderr)
			}
			want := "guarded: not acquired within 1s: redis: restart guard: " + tc.who
			if !strings.Contains(stderr, want) || !strings.Contains(stderr, "less than a TTL: it may have restarted and lost keys; locks on it wait until a TTL (20s) has passed") {
				t.Fatalf("stderr %q, want %q and the reason", stderr, want)
			}
			if !strings.Contains(stderr, "guarded: waiting: redis: restart guard: "+tc.who) {
				t.Fatalf("-v did not say the restart guard held the lock back: %q", stderr)
			}
		})
	}
}
