package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/redis"
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
// and four commands by the server's count, as many as redsync's SET and
// compare-and-delete: SET NX PX and INCR pipelined to acquire with a
// token; EVALSHA running GETDEL to release.
func TestMutexUncontendedCycle(t *testing.T) {
	srv := sharedServer(t)
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
	wakeChannels(t, ctx, c, 1) // subscribed by the first Lock, not counted
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
	want := map[string]int64{"evalsha": cycles, "set": cycles, "incr": cycles, "getdel": cycles}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("commands for %d cycles: %v, want %v", cycles, got, want)
	}
}

// TestMutexHandOffInRelease: the release script makes the first waiter
// the holder, with its token, and tells it alone; the waiter sends
// nothing more (one request in all: the release), and the client's one
// pub/sub channel is subscribed once, however many locks it waits on.
func TestMutexHandOffInRelease(t *testing.T) {
	srv := sharedServer(t)
	ch, cw := dial(t, srv), dial(t, srv)
	ctx := within(t, 20*time.Second)
	const ttl = 10 * time.Second // no refresh or expiry during the test
	// The shared server's count before the test.
	subscribes := commandCalls(t, ch)["subscribe"]
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
	// One SUBSCRIBE per Client that called Lock (sent alongside its first
	// Lock's first attempt), never one per wait.
	wakeChannels(t, ctx, ch, 2)
	if n := commandCalls(t, ch)["subscribe"] - subscribes; n != 2 {
		t.Fatalf("%d SUBSCRIBEs for 5 waits on one client and 6 holds on another, want 2", n)
	}
	if n, _ := ch.Redis().PubSubChannels(ctx, "baton:wake:*").Result(); len(n) != 2 {
		t.Fatalf("wake channels subscribed: %v, want one per client", n)
	}
}

// TestMutexSkipsExpiredEntry: a waiter that stopped refreshing its place
// (it died) is skipped by the release, which hands the lock to the next
// live waiter.
func TestMutexSkipsExpiredEntry(t *testing.T) {
	srv, c, ctx, key := oneServer(t, 20*time.Second)
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
	srv := sharedServer(t)
	ch, cw := dial(t, srv), dial(t, srv)
	ctx := within(t, 20*time.Second)
	// The shared server's count before the test.
	subscribes := commandCalls(t, ch)["subscribe"]
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
	// One SUBSCRIBE per Client that called Lock: the holders' and the
	// waiters'.
	wakeChannels(t, ctx, cw, 2)
	if n := commandCalls(t, cw)["subscribe"] - subscribes; n != 2 {
		l, _ := cw.Redis().ClientList(ctx).Result()
		t.Fatalf("%d SUBSCRIBEs for %d waiting locks on one client and %d held on another, want 2\n%s", n, locks, locks, l)
	}
}

// TestMutexReleaseRestoresForeignKey: a release by a live holder deletes
// the key with GETDEL; should the key hold another value (deleted behind
// the holder's back and taken since), the release puts it back, with a
// ttl, and reports the loss.
func TestMutexReleaseRestoresForeignKey(t *testing.T) {
	_, c, ctx, key := oneServer(t, 10*time.Second)
	const ttl = 10 * time.Second
	m := redis.NewMutex(c, key, redis.WithTTL(ttl))
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	rc := c.Redis()
	if err := rc.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(ctx, key, "someone-else", 5*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	mustLost(t, m.Unlock(ctx))
	if v, err := rc.Get(ctx, key).Result(); err != nil || v != "someone-else" {
		t.Fatalf("key after the release: %q, %v; want the other holder's value", v, err)
	}
	if p, err := rc.PTTL(ctx, key).Result(); err != nil || p <= 0 || p > ttl {
		t.Fatalf("key's ttl after the release: %v, %v; want one, at most the lock's ttl", p, err)
	}
}

// TestMutexContendedKeyJoinsAtOnce: on a Client whose last acquisition of
// a key had to wait, Lock joins the line in its first request (no
// pipelined SET and INCR first); once that key is found free again, Lock
// tries the pipelined SET first again.
func TestMutexContendedKeyJoinsAtOnce(t *testing.T) {
	srv := sharedServer(t)
	ch, cw := dial(t, srv), dial(t, srv)
	ctx := within(t, 20*time.Second)
	key := freshKey(t)
	const ttl = 10 * time.Second
	h := redis.NewMutex(ch, key, redis.WithTTL(ttl))
	wait := func(want map[string]int64) {
		t.Helper()
		if _, err := h.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		before := commandCalls(t, ch)
		w := redis.NewMutex(cw, key, redis.WithTTL(ttl))
		got := make(chan error, 1)
		go func() {
			_, err := w.Lock(ctx)
			got <- err
		}()
		await.Until(t, 10*time.Second, "waiter in line", func() bool {
			return ch.Redis().ZCard(ctx, key+":queue").Val() == 1
		})
		joined := delta(before, commandCalls(t, ch))
		delete(joined, "zcard")
		if want != nil && fmt.Sprint(joined) != fmt.Sprint(want) {
			t.Errorf("commands to join the line: %v, want %v", joined, want)
		}
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Scripts loaded, and the waiter's Client knows the key is contended.
	wait(nil)
	wakeChannels(t, ctx, ch, 2) // both Clients' channels, not counted
	// PTTL twice: the holder's key (for the waiter's timer) and the new
	// line's, which has no expiry yet and so is given one.
	wait(map[string]int64{"evalsha": 1, "set": 1, "append": 1, "pttl": 2, "time": 1, "zadd": 1, "pexpire": 1})

	// Free now: the acquire script takes it at once, and the next Lock
	// tries the pipelined SET first.
	w := redis.NewMutex(cw, key, redis.WithTTL(ttl))
	for range 2 {
		before := commandCalls(t, cw)
		if _, err := w.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		got := delta(before, commandCalls(t, cw))
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if _, piped := got["incr"]; piped && got["evalsha"] == 0 {
			return
		}
	}
	t.Fatal("Lock on a key found free kept joining the line in its first request")
}
