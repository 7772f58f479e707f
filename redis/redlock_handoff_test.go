package redis_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/await"
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
// made, not per request (no INFO); and a cycle starts no goroutine (the
// masters' workers ask them).
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
		for _, a := range admin {
			wakeChannels(t, ctx, a, 1) // subscribed by the first Lock, not counted
		}
		before, pools, started := allCalls(t, admin), poolUse(cs), goroutinesCreated()
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
		started = goroutinesCreated() - started
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
		// Two rounds a cycle asked 4 masters each on goroutines of their
		// own before the workers: 8 a cycle. A few are allowed for what
		// the process does meanwhile (go-redis's pool, timers).
		if started >= cycles {
			t.Fatalf("%d goroutines started during %d cycles on %d masters, want fewer than one a cycle", started, cycles, len(srvs))
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
		if maj := int64(len(srvs)/2 + 1); wrong == "" && want > 0 && d["zrem"] > int64(len(srvs))-maj {
			wrong = fmt.Sprintf("hand-off %d: commands %v: a holder handed the lock by a majority removes no entry from those lines (the hand-offs popped them)", want, d)
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

// handTo does on one master what a release does for the waiter whose
// value is v: it pops v's entry from the line, makes v the holder and
// publishes the hand-off on v's channel. It reports whether v was in line.
func handTo(ctx context.Context, c *redis.Client, key, v string) (bool, error) {
	const script = `
for _, e in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local ev, ttl, ch = string.match(e, '^([^|]+)|%d+|(%d+)|(.+)$')
  if ev == ARGV[1] then
    redis.call('ZREM', KEYS[2], e)
    redis.call('SET', KEYS[1], ev .. '+', 'PX', ttl)
    redis.call('PUBLISH', ch, e .. ' 0')
    return 1
  end
end
return 0`
	n, err := c.Redis().Eval(ctx, script, []string{key, key + ":queue"}, v).Int64()
	return n == 1, err
}

// lineValues returns the values in key's line on c, first in line first.
func lineValues(ctx context.Context, c *redis.Client, key string) []string {
	es, _ := c.Redis().ZRange(ctx, key+":queue", 0, -1).Result()
	var vs []string
	for _, e := range es {
		v, _, _ := strings.Cut(e, "|")
		vs = append(vs, v)
	}
	return vs
}

// TestRedlockSplitVoteGoesToEarliest: two waiters that were each handed
// two of five masters (the fifth held by another library's client) do not
// trade their halves back and forth: the later one yields its masters to
// the earlier, which holds; the later holds after it. Before, both gave
// back what they had at the same moment, each to the other, and could do
// so for as long as they waited.
func TestRedlockSplitVoteGoesToEarliest(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	admin := dialAll(t, srvs)
	q := quorum(t, srvs)
	ctx := within(t, 60*time.Second)
	const ttl = 3 * time.Second
	for round := range 3 {
		key := freshKey(t)
		// Another library's client holds the key on every master; only
		// the fifth keeps it.
		for _, a := range admin {
			if err := a.Redis().Set(ctx, key, "foreign", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
		type result struct {
			who string
			l   *redis.Redlock
		}
		won := make(chan result, 2)
		start := func(who string, n int64) {
			l := redis.NewRedlock(q, key, redis.WithTTL(ttl))
			go func() {
				if _, err := l.Lock(ctx); err != nil {
					if ctx.Err() == nil {
						t.Error(who, err)
					}
					return
				}
				won <- result{who, l}
			}()
			for _, a := range admin {
				queued(t, a, key, n)
			}
		}
		start("earlier", 1)
		start("later", 2)
		vs := lineValues(ctx, admin[0], key)
		if len(vs) != 2 {
			t.Fatalf("line %v", vs)
		}
		earlier, later := vs[0], vs[1]
		for i := range 4 {
			if err := admin[i].Redis().Set(ctx, key, "foreign", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
		// Masters 0 and 1 go to the later waiter, 2 and 3 to the earlier,
		// in one moment, as one release whose lines differed would.
		var wg sync.WaitGroup
		for i, v := range []string{later, later, earlier, earlier} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if ok, err := handTo(ctx, admin[i], key, v); err != nil || !ok {
					t.Errorf("hand master %d: %v %v", i, ok, err)
				}
			}()
		}
		wg.Wait()
		var first result
		select {
		case first = <-won:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: no waiter holds 5 s after a split vote (keys %v)", round, keysOn(ctx, admin, key))
		}
		if first.who != "earlier" {
			t.Fatalf("round %d: the %s waiter held first, want the earlier", round, first.who)
		}
		if err := first.l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case next := <-won:
			if err := next.l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the later waiter does not hold 5 s after the earlier released", round)
		}
	}
}

// keysOn lists key's value on every master.
func keysOn(ctx context.Context, cs []*redis.Client, key string) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Redis().Get(ctx, key).Val())
	}
	return out
}

// TestRedlockContendedKeyJoinsAtOnce: on a Quorum whose last acquisition
// of a key had to wait, Lock joins the masters' lines in its first round
// (no plain SET NX round first).
func TestRedlockContendedKeyJoinsAtOnce(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	qh, qw := quorum(t, srvs), quorum(t, srvs)
	admin := dialAll(t, srvs)
	ctx := within(t, 30*time.Second)
	key := freshKey(t)
	h := redis.NewRedlock(qh, key, redis.WithTTL(rlTTL))
	wait := func() map[string]int64 {
		t.Helper()
		if _, err := h.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		before := allCalls(t, admin)
		w := redis.NewRedlock(qw, key, redis.WithTTL(rlTTL))
		got := make(chan error, 1)
		go func() {
			_, err := w.Lock(ctx)
			got <- err
		}()
		await.Until(t, 10*time.Second, "waiter in every line", func() bool {
			for _, a := range admin {
				if a.Redis().ZCard(ctx, key+":queue").Val() != 1 {
					return false
				}
			}
			return true
		})
		joined := delta(before, allCalls(t, admin))
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		return joined
	}
	if first := wait(); first["set"] != int64(len(srvs)) {
		t.Fatalf("a first wait on a fresh key: %v, want a SET NX round first", first)
	}
	if again := wait(); again["set"] != 0 {
		t.Fatalf("a wait on a key this Quorum waited for last time: %v, want no SET NX round", again)
	}
}
