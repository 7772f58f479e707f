package redis_test

import (
	"context"
	"fmt"
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

// TestRedlockUncontendedCycle: an uncontended Redlock cycle costs, per
// master, SET NX PX to acquire and one script (GET, DEL) to release, as
// redsync's does; the restart guard reads run_id when a connection is
// made, not per request (no INFO).
func TestRedlockUncontendedCycle(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	q := quorum(t, srvs)
	admin := dialAll(t, srvs)
	ctx := within(t, 20*time.Second)
	m := redis.NewRedlock(q, freshKey(t), redis.WithTTL(rlTTL))
	if _, err := m.Lock(ctx); err != nil { // waits out the guard; loads the script
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	const cycles = 10
	before := allCalls(t, admin)
	for range cycles {
		if _, err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := delta(before, allCalls(t, admin))
	n := int64(cycles * len(srvs))
	want := map[string]int64{"set": n, "evalsha": n, "get": n, "del": n}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("commands for %d cycles on %d masters: %v, want %v", cycles, len(srvs), got, want)
	}
}

// TestRedlockHandOff: waiters line up on every master with one ticket;
// each release hands every master to the same next waiter, which holds
// without asking again, in arrival order.
func TestRedlockHandOff(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	admin := dialAll(t, srvs)
	ctx := within(t, 30*time.Second)
	key := freshKey(t)
	const ttl = 5 * time.Second // no refresh during the test
	h := redis.NewRedlock(quorum(t, srvs), key, redis.WithTTL(ttl))
	if _, err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const waiters = 3
	ws := make([]*redis.Redlock, waiters)
	order := make(chan int, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		ws[i] = redis.NewRedlock(quorum(t, srvs), key, redis.WithTTL(ttl))
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
		if d["evalsha"] != int64(len(srvs)) || d["publish"] != int64(len(srvs)) {
			t.Fatalf("hand-off %d: commands %v, want one release script per master, each publishing once, and nothing from the waiter", want, d)
		}
		prev = ws[got]
	}
	wg.Wait()
	if err := prev.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	_ = context.Background()
}
