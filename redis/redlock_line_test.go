package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// TestRedlockLostReplyLeavesNoEntry: a waiter whose join reached a master
// but whose reply was lost (here dropped by a proxy; under load, a reply
// later than the per-instance timeout) has an entry there that no reply
// named. Its next refresh leaves no second entry beside it, and its
// cancelled Lock leaves neither: every line is empty at once, not when
// the entry's life (a ttl) runs out. Before, the refresh queued the waiter
// twice there ("line [a b b]") and a cancelled or finished waiter left the
// entry behind, which the next release would have handed the key to,
// keeping it from the live waiters for a ttl.
func TestRedlockLostReplyLeavesNoEntry(t *testing.T) {
	srvs := redistest.Shared(t, "redlock", 5)
	ttl := batontest.LoadTTL // the entry would outlive every bound below
	for _, s := range srvs {
		s.WaitUp(ttl)
	}
	admin := dialAll(t, srvs)
	ctx := within(t, 60*time.Second)
	key := freshKey(t)
	h := redis.NewRedlock(quorum(t, srvs), key, redis.WithTTL(ttl))
	var ps []*proxy.Proxy
	var cs []*redis.Client
	for _, s := range srvs {
		p := proxy.Start(t, s.Addr())
		ps = append(ps, p)
		cs = append(cs, dialVia(t, p))
	}
	qw := redis.NewQuorum(cs...)
	t.Cleanup(func() { _ = qw.Close() })
	w := redis.NewRedlock(qw, key, redis.WithTTL(ttl))
	lines := func() [][]string {
		var out [][]string
		for _, a := range admin {
			out = append(out, lineValues(ctx, a, key))
		}
		return out
	}
	everyLine := func(what string, n int) {
		t.Helper()
		if !await.Within(ttl/2, func() bool {
			for _, l := range lines() {
				if len(l) != n {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("%s: lines %v, want %d entries in each", what, lines(), n)
		}
	}

	// w waits once, so that its next Lock joins the lines in its first
	// round (the key was contended when w last took it).
	if _, err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := w.Lock(ctx)
		got <- err
	}()
	everyLine("w waiting", 1)
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// A waiter whose join reached master 0 but not its reply: cancelled
	// at once, and after a refresh.
	for _, refresh := range []bool{false, true} {
		if _, err := h.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		ps[0].DropReplies()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			_, err := w.Lock(wctx)
			got <- err
		}()
		everyLine("w joined", 1)
		joined, _ := admin[1].Redis().ZRange(ctx, key+":queue", 0, -1).Result()
		ps[0].Heal()
		if refresh {
			// w refreshes its places every ttl/3: an entry on master 1
			// made after the join. By then master 0 has answered a round.
			if !await.Within(ttl, func() bool {
				now, _ := admin[1].Redis().ZRange(ctx, key+":queue", 0, -1).Result()
				return len(now) == 1 && len(joined) == 1 && now[0] != joined[0]
			}) {
				t.Fatalf("w did not refresh its places within a ttl: lines %v", lines())
			}
			if l := lines()[0]; len(l) != 1 {
				t.Fatalf("after a refresh: line %v on the master whose reply was lost, want w once", l)
			}
		}
		cancel()
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("refresh=%v: cancelled Lock: %v, want context.Canceled", refresh, err)
		}
		everyLine(fmt.Sprintf("refresh=%v: after the cancelled Lock", refresh), 0)
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, a := range admin {
		if n, err := a.Redis().Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Fatalf("master %d after the last Unlock: key exists %d (%v), want none", i, n, err)
		}
	}
}
