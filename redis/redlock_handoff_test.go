package redis_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// allCalls sums commandstats over the masters.
func allCalls(t testing.TB, cs []*redis.Client) map[string]int64 {
	sum := map[string]int64{}
	for _, c := range cs {
		for k, v := range commandCalls(t, c) {
			sum[k] += v
		}
	}
	return sum
}

func dialAll(t testing.TB, srvs []*redistest.Server) []*redis.Client {
	var cs []*redis.Client
	for _, s := range srvs {
		cs = append(cs, dial(t, s))
	}
	return cs
}

// poolUse is, per client, how many connections its go-redis pool had to
// make and how many it has: both stay put while no request outlives its
// context (a request that does, Redlock's per-instance timeout on a
// starved machine, costs its connection, and the next one is dialled).
func poolUse(cs []*redis.Client) string {
	var b strings.Builder
	for _, c := range cs {
		st := c.Redis().PoolStats()
		fmt.Fprintf(&b, "%d/%d ", st.Misses, st.TotalConns)
	}
	return b.String()
}

// measuredQuorum is a Quorum over clients of its own, returned too so
// that a test can watch their pools.
func measuredQuorum(t testing.TB, srvs []*redistest.Server) (*redis.Quorum, []*redis.Client) {
	cs := dialAll(t, srvs)
	return redis.NewQuorum(cs...), cs
}

// attempts bounds how often a command-count test measures again after a
// measurement that load disturbed.
const attempts = 3

// TestRedlockUncontendedCycle: an uncontended Redlock cycle costs, per
// master, SET NX PX to acquire and one script (GET, DEL) to release, as
// redsync's does; the restart guard reads run_id when a connection is
// made, not per request (no INFO).
//
// The count holds for cycles that run as designed: none with a request
// that outlived the per-instance timeout (its connection is dropped, and
// the protocol takes the slow path), none so long that the renewal
// (ttl/3 after the acquisition began) ran inside it. A measurement so
// disturbed by load is logged and taken again on a fresh key, at most
// attempts times.
func TestRedlockUncontendedCycle(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	q, cs := measuredQuorum(t, srvs)
	admin := dialAll(t, srvs)
	ctx := within(t, 30*time.Second)
	const cycles = 10
	n := int64(cycles * len(srvs))
	want := map[string]int64{"set": n, "evalsha": n, "get": n, "del": n}
	for attempt := 1; ; attempt++ {
		// A fresh key: a disturbed measurement may leave its key on a
		// master whose release timed out.
		m := redis.NewRedlock(q, freshKey(t), redis.WithTTL(rlTTL))
		// Not counted: the first cycle waits out the guard, loads the
		// script, and dials again what a disturbance cost.
		if _, err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		before, pools := allCalls(t, admin), poolUse(cs)
		longest := time.Duration(0)
		for range cycles {
			began := time.Now()
			if _, err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			longest = max(longest, time.Since(began))
		}
		got := delta(before, allCalls(t, admin))
		if after := poolUse(cs); after != pools || longest >= rlTTL/3 {
			if attempt == attempts {
				t.Fatalf("every measurement disturbed by load; the last: pools (dials/conns) %s-> %s, longest cycle %v (renewal after %v): %v", pools, after, longest, rlTTL/3, got)
			}
			t.Logf("measurement %d disturbed by load: pools (dials/conns) %s-> %s, longest cycle %v (renewal after %v): %v", attempt, pools, after, longest, rlTTL/3, got)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("commands for %d cycles on %d masters: %v, want %v", cycles, len(srvs), got, want)
		}
		return
	}
}

// TestRedlockHandOff: waiters line up on every master with one ticket;
// each release hands every master to the same next waiter, which holds
// without asking again, in arrival order.
//
// The release is the only request of a hand-off when it runs as
// designed: no request outlived the per-instance timeout (a timed-out
// release leaves the waiter to look again), and no holder's renewal or
// waiter's refresh (every ttl/3) fell inside. A run so disturbed by load
// is logged and made again, at most attempts times; the order is checked
// in every run.
func TestRedlockHandOff(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	admin := dialAll(t, srvs)
	ctx := within(t, 60*time.Second)
	const ttl = 5 * time.Second
	// Wait out the restart guard (the masters' uptime) once, for every
	// run.
	warm := redis.NewRedlock(quorum(t, srvs), freshKey(t), redis.WithTTL(ttl))
	if _, err := warm.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := warm.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		wrong, disturbed := redlockHandOffs(t, ctx, srvs, admin, ttl)
		switch {
		case disturbed == "":
			if wrong != "" {
				t.Fatal(wrong)
			}
			return
		case attempt == attempts:
			t.Fatalf("every run disturbed by load; the last: %s (%s)", disturbed, wrong)
		default:
			t.Logf("run %d disturbed by load: %s (%s)", attempt, disturbed, wrong)
		}
	}
}

// redlockHandOffs runs one holder and three waiters on a fresh key; it
// fails t if the order is wrong, and returns the first hand-off whose
// commands were wrong ("" if none) and what disturbed the run ("" if
// nothing).
func redlockHandOffs(t *testing.T, ctx context.Context, srvs []*redistest.Server, admin []*redis.Client, ttl time.Duration) (wrong, disturbed string) {
	key := freshKey(t)
	var cs []*redis.Client
	newLock := func() *redis.Redlock {
		q, qcs := measuredQuorum(t, srvs)
		cs = append(cs, qcs...)
		return redis.NewRedlock(q, key, redis.WithTTL(ttl))
	}
	h := newLock()
	const waiters = 3
	ws := make([]*redis.Redlock, waiters)
	for i := range ws {
		ws[i] = newLock()
	}
	began, pools := time.Now(), poolUse(cs)
	if _, err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	order := make(chan int, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ws[i].Lock(ctx); err != nil {
				t.Error(err)
				order <- -1
				return
			}
			order <- i
		}()
		for _, c := range admin {
			queued(t, c, key, int64(i+1))
		}
	}
	prev := h
	for want := range waiters {
		before := allCalls(t, admin)
		if err := prev.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-order
		if got != want {
			t.Fatalf("hand-off to waiter %d, want %d (FIFO)", got, want)
		}
		d := delta(before, allCalls(t, admin))
		if wrong == "" && (d["evalsha"] != int64(len(srvs)) || d["publish"] != int64(len(srvs))) {
			wrong = fmt.Sprintf("hand-off %d: commands %v, want one release script per master, each publishing once, and nothing from the waiter", want, d)
		}
		prev = ws[got]
	}
	// No renewal or refresh ran before ttl/3 had passed since the
	// holder's first round.
	took := time.Since(began)
	wg.Wait()
	if err := prev.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if after := poolUse(cs); after != pools || took >= ttl/3 {
		disturbed = fmt.Sprintf("pools (dials/conns) %s-> %s, run %v (renewals and refreshes after %v)", pools, after, took, ttl/3)
	}
	return wrong, disturbed
}
