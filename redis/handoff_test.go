package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
	goredis "github.com/redis/go-redis/v9"
)

// commandCalls reads INFO commandstats: calls per command, counted by the
// server (commands run inside scripts included).
func commandCalls(t testing.TB, c *redis.Client) map[string]int64 {
	t.Helper()
	s, err := c.Redis().Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for line := range strings.SplitSeq(s, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out
}

// delta is after - before, without INFO itself and zero counts.
func delta(before, after map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range after {
		if k != "info" && v != before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// TestMutexUncontendedCycle: an uncontended Lock/Unlock is two requests
// (one script each) and six commands by the server's count: EVALSHA, SET
// and INCR to acquire with a token; EVALSHA, GET and DEL to release.
func TestMutexUncontendedCycle(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	c := dial(t, srv)
	ctx := within(t, 10*time.Second)
	m := redis.NewMutex(c, freshKey(t), redis.WithTTL(10*time.Second))
	// Load the scripts first (the first run of each is a NOSCRIPT + EVAL).
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	const cycles = 10
	before := commandCalls(t, c)
	for range cycles {
		if _, err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := delta(before, commandCalls(t, c))
	want := map[string]int64{"evalsha": 2 * cycles, "set": cycles, "incr": cycles, "get": cycles, "del": cycles}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("commands for %d cycles: %v, want %v", cycles, got, want)
	}
}

// TestMutexHandOffInRelease: the release script makes the first waiter
// the holder, with its token, and tells it alone; the waiter sends
// nothing more (one request in all: the release), and the client's one
// pub/sub channel is subscribed once, however many locks it waits on.
func TestMutexHandOffInRelease(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	ch, cw := dial(t, srv), dial(t, srv)
	ctx := within(t, 20*time.Second)
	const ttl = 10 * time.Second // no refresh or expiry during the test
	// Load the scripts (the first run of each is EVALSHA, NOSCRIPT, EVAL).
	warm := redis.NewMutex(ch, freshKey(t))
	if _, err := warm.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := warm.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		key := freshKey(t)
		h := redis.NewMutex(ch, key, redis.WithTTL(ttl))
		hl, err := h.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w := redis.NewMutex(cw, key, redis.WithTTL(ttl))
		got := make(chan error, 1)
		var token int64
		go func() {
			l, err := w.Lock(ctx)
			if err == nil {
				token = l.Token()
			}
			got <- err
		}()
		queued(t, ch, key, 1)
		before := commandCalls(t, ch)
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		d := delta(before, commandCalls(t, ch))
		if d["evalsha"]+d["eval"] != 1 || d["publish"] != 1 {
			t.Fatalf("hand-off %d: commands %v, want one script (the release) that publishes once", i, d)
		}
		if token <= hl.Token() {
			t.Fatalf("hand-off %d: token %d not above the releaser's %d", i, token, hl.Token())
		}
		if v, _ := ch.Redis().Get(ctx, key).Result(); v == "" {
			t.Fatalf("hand-off %d: the key is not set for the new holder", i)
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := commandCalls(t, ch)["subscribe"]; n != 1 {
		t.Fatalf("%d SUBSCRIBEs for 5 waits on one client, want 1", n)
	}
	if n, _ := ch.Redis().PubSubChannels(ctx, "baton:wake:*").Result(); len(n) != 1 {
		t.Fatalf("wake channels subscribed: %v, want the waiting client's one", n)
	}
}

// TestMutexSkipsExpiredEntry: a waiter that stopped refreshing its place
// (it died) is skipped by the release, which hands the lock to the next
// live waiter.
func TestMutexSkipsExpiredEntry(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	c := dial(t, srv)
	ctx := within(t, 20*time.Second)
	key := freshKey(t)
	h := redis.NewMutex(c, key, redis.WithTTL(10*time.Second))
	if _, err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// A dead waiter ahead in line: its entry's deadline has passed.
	dead := strings.Repeat("d", 32) + "|1|10000|baton:wake:nobody"
	if err := c.Redis().ZAdd(ctx, key+":queue", goredis.Z{Score: 1, Member: dead}).Err(); err != nil {
		t.Fatal(err)
	}
	w := redis.NewMutex(dial(t, srv), key, redis.WithTTL(10*time.Second))
	got := make(chan error, 1)
	go func() { _, err := w.Lock(ctx); got <- err }()
	queued(t, c, key, 2)
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the live waiter was not handed the lock past a dead entry")
	}
	if n, _ := c.Redis().ZCard(ctx, key+":queue").Result(); n != 0 {
		t.Fatalf("%d entries left in line", n)
	}
	_ = w.Unlock(ctx)
}

// TestMutexManyLocksOneClient: waiters on many keys share their client's
// one pub/sub connection, and every hand-off reaches the right waiter.
func TestMutexManyLocksOneClient(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	ch, cw := dial(t, srv), dial(t, srv)
	ctx := within(t, 20*time.Second)
	const locks = 20
	var wg sync.WaitGroup
	errs := make(chan error, locks)
	holders := make([]*redis.Mutex, locks)
	keys := make([]string, locks)
	for i := range locks {
		keys[i] = freshKey(t)
		holders[i] = redis.NewMutex(ch, keys[i], redis.WithTTL(10*time.Second))
		if _, err := holders[i].Lock(ctx); err != nil {
			t.Fatal(err)
		}
		w := redis.NewMutex(cw, keys[i], redis.WithTTL(10*time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.Lock(ctx); err != nil {
				errs <- err
				return
			}
			errs <- w.Unlock(ctx)
		}()
	}
	for i := range locks {
		queued(t, ch, keys[i], 1)
	}
	for i := range locks {
		if err := holders[i].Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := commandCalls(t, cw)["subscribe"]; n != 1 {
		l, _ := cw.Redis().ClientList(ctx).Result()
		t.Fatalf("%d SUBSCRIBEs for %d waiting locks on one client, want 1\n%s", n, locks, l)
	}
}
