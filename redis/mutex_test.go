package redis_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

func TestMutexTryLock(t *testing.T) {
	_, c, ctx, key := oneServer(t, 10*time.Second)
	subscribes := commandCalls(t, c)["subscribe"]
	a := redis.NewMutex(c, key, redis.WithTTL(time.Second))
	b := redis.NewMutex(c, key, redis.WithTTL(time.Second))
	if _, err := a.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock on a held lock: %v", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx); err != nil {
		t.Fatalf("TryLock on a free lock: %v", err)
	}
	_ = b.Unlock(ctx)
	// TryLock never waits, so it never subscribes the Client's channel.
	if n := commandCalls(t, c)["subscribe"] - subscribes; n != 0 {
		t.Fatalf("%d SUBSCRIBEs after TryLocks only, want 0", n)
	}
}

// queued waits until n waiters are in key's line.
func queued(t *testing.T, c *redis.Client, key string, n int64) {
	t.Helper()
	await.Until(t, 10*time.Second, "waiters in line", func() bool {
		got, _ := c.Redis().ZCard(context.Background(), key+":queue").Result()
		return got == n
	})
}

// The line (K:queue) outlives every live entry in it, and is not written
// on every join: a join or refresh pushes its expiry to two entry lives
// (a ttl each) when less than one is left, and leaves a longer one alone.
func TestLineOutlivesEntries(t *testing.T) {
	srv, c, ctx, key := oneServer(t, 30*time.Second)
	const ttl = 3 * time.Second
	holder := redis.NewMutex(c, key, redis.WithTTL(ttl))
	if _, err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	join := func(n int64) time.Duration {
		w := redis.NewMutex(dial(t, srv), key, redis.WithTTL(ttl))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = w.Lock(wctx)
		}()
		queued(t, c, key, n)
		d, err := c.Redis().PTTL(ctx, key+":queue").Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := join(1); d <= ttl || d > 2*ttl {
		t.Fatalf("a new line expires in %v, want in (%v, %v]", d, ttl, 2*ttl)
	}
	if err := c.Redis().PExpire(ctx, key+":queue", 10*ttl).Err(); err != nil {
		t.Fatal(err)
	}
	if d := join(2); d <= 9*ttl {
		t.Fatalf("a join moved a line expiry of %v to %v; want it left alone", 10*ttl, d)
	}
	if err := c.Redis().PExpire(ctx, key+":queue", ttl/2).Err(); err != nil {
		t.Fatal(err)
	}
	if d := join(3); d <= ttl || d > 2*ttl {
		t.Fatalf("a join left a line with %v to live; want (%v, %v]", d, ttl, 2*ttl)
	}
}

func TestMutexFIFO(t *testing.T) {
	srv, c, ctx, key := oneServer(t, 30*time.Second)
	holder := redis.NewMutex(c, key, redis.WithTTL(2*time.Second))
	if _, err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const waiters = 4
	order := make(chan int, waiters+1)
	var wg sync.WaitGroup
	for i := range waiters {
		m := redis.NewMutex(dial(t, srv), key, redis.WithTTL(2*time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.Lock(ctx); err != nil {
				order <- -1
				return
			}
			order <- i
			_ = m.Unlock(ctx)
		}()
		queued(t, c, key, int64(i+1))
	}
	// The releasing client asks again at once: it must queue behind them.
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	again := make(chan error, 1)
	go func() {
		_, err := holder.Lock(ctx)
		if err == nil {
			order <- waiters
			err = holder.Unlock(ctx)
		}
		again <- err
	}()
	wg.Wait()
	if err := <-again; err != nil {
		t.Fatal(err)
	}
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Fatalf("acquired by %d, want %d (FIFO)", got, want)
		}
		want++
	}
}

// TestMutexWakesOnExpiry: a holder that never releases (here a foreign
// client's SET) is waited out through the key's remaining ttl, no message.
func TestMutexWakesOnExpiry(t *testing.T) {
	_, c, ctx, key := oneServer(t, 10*time.Second)
	if err := c.Redis().Set(ctx, key, "someone-else", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	m := redis.NewMutex(c, key, redis.WithTTL(3*time.Second))
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	_ = m.Unlock(ctx)
}

// TestMutexLostOnKill: when the server dies while the lock is held, the
// lease ends as lost before the ttl measured from the acquiring command.
func TestMutexLostOnKill(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	c := dial(t, srv)
	ctx := within(t, 10*time.Second)
	const ttl = time.Second
	m := redis.NewMutex(c, freshKey(t), redis.WithTTL(ttl))
	settled(t, c, ttl) // a new server: the restart guard's wait is not timed
	start := time.Now()
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	waitDone(t, l, 5*time.Second)
	// The lease ends at the acquiring command's send time plus ttl minus
	// the drift allowance; allow for timer scheduling on a loaded machine
	// under -race.
	if el := time.Since(start); el > ttl+400*time.Millisecond {
		t.Fatalf("lost signal after %v, later than the ttl %v", el, ttl)
	}
	mustLost(t, l.Err())
	mustLost(t, m.Unlock(ctx))
}

// TestMutexLostWhenStolen: a key deleted under the holder is noticed at the
// next renewal.
func TestMutexLostWhenStolen(t *testing.T) {
	_, c, ctx, key := oneServer(t, 10*time.Second)
	m := redis.NewMutex(c, key, redis.WithTTL(300*time.Millisecond))
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Redis().Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, l, 5*time.Second)
	mustLost(t, l.Err())
}

// TestMutexRenews: a holder keeps the lock well past its ttl, and Held
// says so until Unlock.
func TestMutexRenews(t *testing.T) {
	_, c, ctx, key := oneServer(t, 10*time.Second)
	const ttl = 600 * time.Millisecond
	m := redis.NewMutex(c, key, redis.WithTTL(ttl))
	start := time.Now()
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := redis.NewMutex(c, key, redis.WithTTL(ttl))
	renewedPast(t, m, start, 3*ttl, func() {
		if _, err := other.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
			t.Fatalf("TryLock while held and renewed: %v", err)
		}
	})
	if l.Err() != nil || !m.Held() {
		t.Fatalf("after renewals: lease %v, held %v", l.Err(), m.Held())
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Held() {
		t.Fatal("Held after Unlock")
	}
}

// TestMutexTokensSurviveRestart: the token counter is seeded from the
// server clock, so a server restarted empty keeps tokens increasing.
func TestMutexTokensSurviveRestart(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	c, ctx, key := dial(t, srv), within(t, 20*time.Second), freshKey(t)
	m := redis.NewMutex(c, key, redis.WithTTL(time.Second))
	var last int64
	for range 3 {
		l, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last = l.Token()
		_ = m.Unlock(ctx)
	}
	srv.Restart()
	var l *baton.Lease
	await.Until(t, 10*time.Second, "lock after restart", func() bool {
		var err error
		l, err = m.TryLock(ctx)
		return err == nil
	})
	if l.Token() <= last {
		t.Fatalf("token after an empty restart %d, not above %d", l.Token(), last)
	}
	_ = m.Unlock(ctx)
}

// TestMutexWakeAfterReconnect: after the server restarts, the pub/sub
// connection comes back and a waiter is still woken by the release
// message: it holds well before the ttl/3 after which it would look again
// on its own.
func TestMutexWakeAfterReconnect(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	cw, ch := dial(t, srv), dial(t, srv)
	ctx := within(t, 30*time.Second)
	key := freshKey(t)
	const ttl = 3 * time.Second
	h := redis.NewMutex(ch, key, redis.WithTTL(ttl))
	w := redis.NewMutex(cw, key, redis.WithTTL(ttl))
	roundTrip := func() {
		t.Helper()
		// The server is new: both wait out the restart guard first.
		settled(t, ch, ttl)
		settled(t, cw, ttl)
		if _, err := h.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			_, err := w.Lock(ctx)
			got <- err
		}()
		queued(t, ch, key, 1)
		released := time.Now()
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(released); d > ttl/6 {
			t.Fatalf("the waiter held %v after the release: not woken by the release message (it looks again every %v)", d, ttl/3)
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip()
	srv.Restart()
	await.Until(t, 10*time.Second, "server back", func() bool {
		return ch.Redis().Ping(ctx).Err() == nil && cw.Redis().Ping(ctx).Err() == nil
	})
	roundTrip()
}

// TestMutexLostOnPause: a server that stops answering (SIGSTOP) without
// closing connections is a loss too, signalled within the ttl.
func TestMutexLostOnPause(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	c := dial(t, srv)
	ctx := within(t, 10*time.Second)
	const ttl = time.Second
	m := redis.NewMutex(c, freshKey(t), redis.WithTTL(ttl))
	settled(t, c, ttl) // a new server: the restart guard's wait is not timed
	start := time.Now()
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	t.Cleanup(srv.Resume)
	waitDone(t, l, 5*time.Second)
	if el := time.Since(start); el > ttl+400*time.Millisecond {
		t.Fatalf("lost signal after %v, later than the ttl %v", el, ttl)
	}
	mustLost(t, l.Err())
	srv.Resume()
}
