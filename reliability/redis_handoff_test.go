package reliability

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// redisWaiterEnv, when set, makes the test binary a process that waits
// for a Redis Mutex (BATON_RW_ADDR, BATON_RW_NAME, BATON_RW_TTL) and
// prints "LOCKED <token>" if it ever gets it.
const redisWaiterEnv = "BATON_RELIABILITY_REDIS_WAITER"

func redisWaiterMain() int {
	ttl, _ := time.ParseDuration(os.Getenv("BATON_RW_TTL"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := redis.Dial(ctx, "redis://"+os.Getenv("BATON_RW_ADDR"))
	if err != nil {
		fmt.Println("ERROR", err)
		return 2
	}
	defer c.Close()
	l, err := redis.NewMutex(c, os.Getenv("BATON_RW_NAME"), redis.WithTTL(ttl)).Lock(ctx)
	if err != nil {
		fmt.Println("ERROR", err)
		return 2
	}
	fmt.Printf("LOCKED %d\n", l.Token())
	<-ctx.Done()
	return 0
}

// startRedisWaiter starts a waiter process; it is killed when the test ends.
func startRedisWaiter(t *testing.T, addr, key string, ttl time.Duration) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), redisWaiterEnv+"=1", "BATON_RW_ADDR="+addr, "BATON_RW_NAME="+key, "BATON_RW_TTL="+ttl.String())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func dialRedis(t *testing.T, ctx context.Context, addr string) *redis.Client {
	t.Helper()
	c, err := redis.Dial(ctx, "redis://"+addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// inLine waits until key's line has n entries.
func inLine(t *testing.T, ctx context.Context, c *redis.Client, key string, n int64) {
	t.Helper()
	if !await.WithinCtx(ctx, func() bool {
		got, err := c.Redis().ZCard(ctx, key+":queue").Result()
		return err == nil && got == n
	}) {
		t.Fatalf("line of %s never reached %d", key, n)
	}
}

// A waiter killed after a release handed it the lock, before it noticed:
// the lock is held by nobody until the dead waiter's ttl runs out, then
// the next waiter gets it. Nothing hangs, and nobody gets it sooner.
func TestRedisHandedToKilledWaiter(t *testing.T) {
	independent(t)
	srv := redistest.Start(t, redistest.Config{})
	n := runs(2, 10)
	const ttl = time.Second
	row := Row{Scenario: "hand-off to a waiter killed before it noticed", Store: "redis", Runs: n}
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		key := fmt.Sprintf("reliability:handed:%d", time.Now().UnixNano())
		admin := dialRedis(t, ctx, srv.Addr())
		h := redis.NewMutex(dialRedis(t, ctx, srv.Addr()), key, redis.WithTTL(ttl))
		held, err := h.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w := startRedisWaiter(t, srv.Addr(), key, ttl)
		inLine(t, ctx, admin, key, 1)
		next := redis.NewMutex(dialRedis(t, ctx, srv.Addr()), key, redis.WithTTL(ttl))
		got := make(chan *baton.Lease, 1)
		go func() {
			l, err := next.Lock(ctx)
			if err != nil {
				t.Errorf("the waiter behind the dead one: %v", err)
			}
			got <- l
		}()
		inLine(t, ctx, admin, key, 2)
		// Stop the first waiter so it cannot notice the hand-off, hand
		// the lock to it, then kill it.
		_ = w.Process.Signal(syscall.SIGSTOP)
		handed := time.Now()
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if v, _ := admin.Redis().Get(ctx, key).Result(); v == "" {
			t.Fatal("the release did not hand the lock to the stopped waiter")
		}
		_ = w.Process.Signal(syscall.SIGKILL)
		l := <-got
		d := time.Since(handed)
		row.Recovery = append(row.Recovery, d)
		if l == nil || d > ttl+time.Second || d < ttl/2 || l.Token() <= held.Token()+1 {
			row.Violations++
			t.Errorf("run %d: next holder after %v (want the dead waiter's ttl %v, within 1 s), lease %v", i, d, ttl, l)
		}
		if l != nil {
			_ = next.Unlock(ctx)
		}
		cancel()
	}
	row.Note = "TTL 1s; recovery = hand-off → next waiter holds (bound: the dead waiter's TTL, + 1 s)"
	record(row)
}

// FLUSHALL under a holder and a line of waiters: the holder learns it
// lost the lock, every waiter gets the lock in turn (nothing hangs), the
// waiters never overlap, and tokens keep increasing.
func TestRedisFlushallUnderLine(t *testing.T) {
	independent(t)
	srv := redistest.Start(t, redistest.Config{})
	n := runs(2, 10)
	const ttl = time.Second
	const waiters = 6
	row := Row{Scenario: "FLUSHALL under a line of waiters", Store: "redis", Runs: n}
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		key := fmt.Sprintf("reliability:flushall:%d", time.Now().UnixNano())
		admin := dialRedis(t, ctx, srv.Addr())
		h := redis.NewMutex(dialRedis(t, ctx, srv.Addr()), key, redis.WithTTL(ttl))
		held, err := h.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var chk batontest.Checker
		var wg sync.WaitGroup
		tokens := make(chan int64, waiters)
		for w := range waiters {
			m := redis.NewMutex(dialRedis(t, ctx, srv.Addr()), key, redis.WithTTL(ttl))
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := m.Lock(ctx)
				if err != nil {
					t.Errorf("waiter %d: %v", w, err)
					return
				}
				tokens <- l.Token()
				sp := chk.Enter(w, l.Token())
				hold(l, 2*time.Millisecond)
				chk.Leave(sp)
				_ = m.Unlock(ctx)
			}()
		}
		inLine(t, ctx, admin, key, waiters)
		flushed := time.Now()
		if err := admin.Redis().FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-held.Done():
		case <-time.After(ttl + time.Second):
			t.Fatal("the holder never learned that FLUSHALL took its lock")
		}
		lostAfter := time.Since(flushed)
		if !errors.Is(held.Err(), baton.ErrLost) {
			t.Errorf("holder's lease after FLUSHALL: %v", held.Err())
		}
		_ = h.Unlock(ctx)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("waiters hung after FLUSHALL")
		}
		all := time.Since(flushed)
		close(tokens)
		for tok := range tokens {
			if tok <= held.Token() {
				row.Violations++
				t.Errorf("run %d: token %d after FLUSHALL not above the lost holder's %d", i, tok, held.Token())
			}
		}
		if err := chk.Verify(true); err != nil {
			row.Violations++
			t.Errorf("run %d: %v", i, err)
		}
		row.Margins = append(row.Margins, lostAfter)
		row.Recovery = append(row.Recovery, all)
		cancel()
	}
	row.Note = fmt.Sprintf("TTL 1s, %d waiters; margin = FLUSHALL → holder told of the loss; recovery = FLUSHALL → every waiter served", waiters)
	record(row)
}

// A Redlock master killed and restarted empty while a release hands the
// lock over: the waiter gets it from the other masters, the restarted
// master stays out of the vote, and nobody overlaps.
func TestRedisRedlockRestartDuringHandOff(t *testing.T) {
	independent(t)
	srvs := redistest.StartN(t, 5, redistest.Config{})
	var urls []string
	for _, s := range srvs {
		urls = append(urls, s.URL())
	}
	n := runs(2, 10)
	const ttl = time.Second
	row := Row{Scenario: "Redlock master restarted empty during a hand-off", Store: "redis×5", Runs: n}
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		key := fmt.Sprintf("reliability:redlock-handoff:%d", time.Now().UnixNano())
		open := func() *redis.Redlock {
			q, err := redis.DialRedlock(ctx, urls)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = q.Close() })
			return redis.NewRedlock(q, key, redis.WithTTL(ttl))
		}
		var chk batontest.Checker
		a, b := open(), open()
		la, err := a.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sa := chk.Enter(0, 0)
		got := make(chan *baton.Lease, 1)
		var gotAt time.Time
		go func() {
			l, err := b.Lock(ctx)
			gotAt = time.Now()
			if err != nil {
				t.Errorf("waiter: %v", err)
			}
			got <- l
		}()
		for _, s := range srvs {
			c := dialRedis(t, ctx, s.Addr())
			inLine(t, ctx, c, key, 1)
		}
		// Master i%5 stops answering; the release reaches the other four
		// (which hand the key to b) while it is killed and restarted empty.
		victim := srvs[i%len(srvs)]
		victim.Pause()
		start := time.Now()
		chk.Leave(sa)
		released := make(chan error, 1)
		go func() { released <- a.Unlock(ctx) }()
		victim.Kill()
		victim.Restart()
		lb := <-got
		d := gotAt.Sub(start)
		if err := <-released; err != nil && !errors.Is(err, baton.ErrLost) {
			t.Errorf("release: %v", err)
		}
		_ = la
		if lb == nil {
			t.Fatal("the waiter never got the lock")
		}
		sb := chk.Enter(1, 0)
		// A third client cannot take it while b holds it.
		c := open()
		if l, err := c.TryLock(ctx); err == nil {
			row.Violations++
			t.Errorf("run %d: a third client got the lock while the waiter held it (lease %v)", i, l)
			_ = c.Unlock(ctx)
		}
		hold(lb, 2*time.Millisecond)
		chk.Leave(sb)
		if err := b.Unlock(ctx); err != nil {
			t.Errorf("waiter's unlock: %v", err)
		}
		if err := chk.Verify(false); err != nil {
			row.Violations++
			t.Errorf("run %d: %v", i, err)
		}
		row.Recovery = append(row.Recovery, d)
		cancel()
	}
	row.Note = "TTL 1s; recovery = release → waiter holds, with one master paused, killed and restarted empty meanwhile"
	record(row)
}
