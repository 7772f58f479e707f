package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/internal/proxy"
)

// TestLockJeopardyGivesUpHold: a holder out of contact with the store for
// TTL − margin − --grace gets SIGTERM while its hold still stands; contact
// comes back before the deadline, yet the hold is given up: CMD stopped,
// exit 76 "in jeopardy", and the waiter takes the lock once the holder
// has released it, not before.
func TestLockJeopardyGivesUpHold(t *testing.T) {
	t.Parallel()
	for _, st := range testStores {
		if !runsOn(t, st) {
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			direct, viaProxy, pxs := proxied(t, st)
			log := filepath.Join(t.TempDir(), "log")
			// Out of contact for TTL − margin − grace (at most 6 − 1.2 −
			// 2.5 = 2.3 s) gives the notice, 2.5 s before the deadline:
			// time for contact to come back.
			holder := start(t, env("BATON_STORE="+viaProxy), "lock", "--ttl", "6s", "--grace", "2.5s", "/jeopardy", "--", "sh", "-c",
				`trap 'echo term >> "$0"; exit 0' TERM; echo ready; while :; do sleep 0.05; done`, log)
			holder.waitOutput("ready", 20*time.Second)
			other := start(t, env("BATON_STORE="+direct), "lock", "/jeopardy", "--", "sh", "-c", `echo acquired >> "$0"`, log)
			if !waitHolderAndWaiter(t, direct, "/jeopardy", holder) {
				t.Fatalf("holder exited before the fault: %d %q", holder.code, holder.stderr.String())
			}
			for _, px := range pxs {
				px.Blackhole()
			}
			proctest.WaitFile(t, log, "term", 20*time.Second)
			for _, px := range pxs {
				px.Heal()
			}
			if code := holder.wait(20 * time.Second); code != exitLost {
				t.Fatalf("holder exit %d, want 76; stderr %q", code, holder.stderr.String())
			}
			if msg := holder.stderr.String(); !strings.Contains(msg, "baton: lock /jeopardy in jeopardy while CMD ran (no contact with the store confirmed until --grace 2.5s before the loss deadline); CMD stopped, giving the hold up") {
				t.Fatalf("holder stderr %q", msg)
			}
			if code := other.wait(20 * time.Second); code != 0 {
				t.Fatalf("waiter exit %d: %q", code, other.stderr.String())
			}
			if got, _ := os.ReadFile(log); string(got) != "term\nacquired\n" {
				t.Fatalf("log %q, want the holder's notice, then the waiter's start", got)
			}
		})
	}
}

// TestGraceEveryHold: every command that runs CMD under a hold gives it
// the grace's SIGTERM when cut off from the store: elect, elect
// --requeue, semaphore, an expiring permit and a multi-lock, as lock.
func TestGraceEveryHold(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"elect", "/g-elect"},
		{"elect", "--requeue", "/g-requeue"},
		{"semaphore", "-n", "2", "/g-sem"},
		{"semaphore", "-n", "2", "--permit-ttl", "1m", "/g-permit"},
		{"lock", "/g-a", "/g-b"},
	} {
		t.Run(strings.Join(args[:len(args)-1], "_"), func(t *testing.T) {
			t.Parallel()
			px := proxy.Start(t, sharedEtcd(t))
			log := filepath.Join(t.TempDir(), "log")
			requeue := args[1] == "--requeue"
			args = append(append([]string{args[0], "--ttl", "3s", "--grace", "1s"}, args[1:]...), "--", "sh", "-c",
				`trap 'echo term >> "$0"; exit 0' TERM; echo ready; while :; do sleep 0.05; done`, log)
			p := start(t, env("BATON_STORE=etcd://"+px.Addr()), args...)
			p.waitOutput("ready", 20*time.Second)
			px.Blackhole()
			proctest.WaitFile(t, log, "term", 20*time.Second)
			px.Heal() // so that the release does not wait out its timeout
			if requeue {
				// It campaigns again, until a signal.
				p.signal(syscall.SIGINT)
				p.wait(20 * time.Second)
				return
			}
			if code := p.wait(20 * time.Second); code != exitLost {
				t.Fatalf("exit %d, want 76; stderr %q", code, p.stderr.String())
			}
		})
	}
}

// waitHolderAndWaiter waits until name has a holder and a waiter, and
// reports true, or false if the holder exits first. On Redis the waiter is
// an entry in the lock's line.
func waitHolderAndWaiter(t *testing.T, url, name string, holder *proc) bool {
	t.Helper()
	ok := await.Within(20*time.Second, func() bool {
		if exited(holder) {
			return true
		}
		r := statusOf(t, env("BATON_STORE="+url), name)
		return r.Holders == 1 && r.Waiters == 1
	})
	if !ok {
		t.Fatalf("status of %s never showed a holder and a waiter", name)
	}
	return !exited(holder)
}

// exited reports whether p has exited.
func exited(p *proc) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
