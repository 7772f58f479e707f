package reliability

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// locker is what the Redis scenarios need of a lock.
type locker interface {
	Lock(ctx context.Context) (*baton.Lease, error)
	Unlock(ctx context.Context) error
}

// Redlock over 5 masters at scale: 8 contenders run lock cycles while
// masters are killed (2 of 5: locking goes on) and restarted empty (the
// restart guard keeps them out of the quorum for a TTL). No overlap.
func TestRedisRedlockFaults(t *testing.T) {
	independent(t)
	srvs := redistest.StartN(t, 5, redistest.Config{})
	var urls []string
	for _, s := range srvs {
		urls = append(urls, s.URL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const clients = 8
	cycles := runs(200, 1000)
	const ttl = 2 * time.Second
	key := fmt.Sprintf("reliability:redlock:%d", time.Now().UnixNano())
	var chk batontest.Checker
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		q, err := redis.DialRedlock(ctx, urls)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		m := redis.NewRedlock(q, key, redis.WithTTL(ttl))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- lockCycles(ctx, m, i, &chk, &done, int64(cycles))
		}()
	}
	// Faults at fixed points of the run: kill two masters, bring them
	// back empty one at a time, then kill and restore a third.
	type step struct {
		at   int64
		name string
		do   func()
	}
	steps := []step{
		{int64(cycles) / 6, "kill masters 0 and 1", func() { srvs[0].Kill(); srvs[1].Kill() }},
		{int64(cycles) * 2 / 6, "restart master 0 empty", func() { srvs[0].Restart() }},
		{int64(cycles) * 3 / 6, "restart master 1 empty", func() { srvs[1].Restart() }},
		{int64(cycles) * 4 / 6, "kill master 2", func() { srvs[2].Kill() }},
		{int64(cycles) * 5 / 6, "restart master 2 empty", func() { srvs[2].Restart() }},
	}
	var recovery []time.Duration
	for _, st := range steps {
		if !await.WithinCtx(ctx, func() bool { return done.Load() >= st.at }) {
			t.Fatalf("stalled before %q at %d of %d cycles", st.name, done.Load(), cycles)
		}
		before := done.Load()
		t0 := time.Now()
		st.do()
		if !await.WithinCtx(ctx, func() bool { return done.Load() > before+1 }) {
			t.Fatalf("no progress after %q", st.name)
		}
		recovery = append(recovery, time.Since(t0))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	v := 0
	if err := chk.Verify(false); err != nil {
		v = 1
		t.Error(err)
	}
	record(Row{Scenario: "redis: Redlock×5, masters killed and restarted empty", Store: "redis×5", Runs: int(done.Load()),
		Violations: v, Recovery: recovery,
		Note: "8 contenders; 2 of 5 down, then 3 restarted empty under the run_id guard; recovery = fault → next 2 acquisitions; no fencing tokens (Redlock)"})
}

// lockCycles locks m until n cycles are done in all, recording each
// critical section (ended early if the lease is lost).
func lockCycles(ctx context.Context, m locker, who int, chk *batontest.Checker, done *atomic.Int64, n int64) error {
	for done.Load() < n {
		l, err := m.Lock(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("client %d: %w", who, err)
			}
			continue // e.g. no quorum while masters are down: try again
		}
		sp := chk.Enter(who, l.Token())
		hold(l, time.Millisecond)
		chk.Leave(sp)
		done.Add(1)
		if err := m.Unlock(ctx); err != nil && ctx.Err() != nil {
			return err
		}
	}
	return nil
}

// Partition on single-instance Redis: the holder's connection is
// blackholed; its lost signal must fire before another client acquires.
func TestRedisPartition(t *testing.T) {
	independent(t)
	srv := redistest.Start(t, redistest.Config{})
	n := runs(3, 20)
	row := Row{Scenario: "partition: holder blackholed", Store: "redis", Runs: n}
	for i := range n {
		margin, rec, ok := redisPartitionOnce(t, srv.Addr())
		if !ok {
			row.Violations++
			t.Errorf("run %d: another client acquired before the holder knew it lost the lock", i)
		}
		row.Margins = append(row.Margins, margin)
		row.Recovery = append(row.Recovery, rec)
	}
	row.Note = "TTL 1s; recovery = blackhole → next holder; margin = holder's loss signal → next holder"
	record(row)
}

func redisPartitionOnce(t *testing.T, addr string) (margin, recovery time.Duration, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := proxy.Start(t, addr)
	key := fmt.Sprintf("reliability:partition:%d", time.Now().UnixNano())
	dial := func(a string) *redis.Client {
		c, err := redis.Dial(ctx, "redis://"+a)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	holder := redis.NewMutex(dial(p.Addr()), key, redis.WithTTL(time.Second))
	other := redis.NewMutex(dial(addr), key, redis.WithTTL(time.Second))
	held, err := holder.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lostAt := make(chan time.Time, 1)
	go func() { <-held.Done(); lostAt <- time.Now() }()
	start := time.Now()
	p.Blackhole()
	defer p.Heal()
	if _, err := other.Lock(ctx); err != nil {
		t.Fatalf("other Lock: %v", err)
	}
	acquired := time.Now()
	select {
	case <-held.Done():
		ok = true
	default:
	}
	return acquired.Sub(<-lostAt), acquired.Sub(start), ok
}
