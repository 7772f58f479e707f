package reliability

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// restartTTL is the lock ttl of the restart scenario: the holder renews
// every ttl/3, long after a waiter could take the key of a server
// restarted empty, were it not for the restart guard.
const restartTTL = 3 * time.Second

// A single server killed (kill -9) and restarted empty 0.2 s later while a
// lock is held and waited for (issue 26): the holder works until its
// lease ends, a waiter in line and a client that dials only after the
// restart (it never saw the old server) work 300 ms each once they hold.
// No two at once, tokens increasing, nobody holding within a TTL of the
// restart: the restart guard keeps the lock off the restarted server for
// a TTL, past every lease granted before.
func TestRedisRestartedEmpty(t *testing.T) {
	independent(t)
	srv := redistest.Start(t, redistest.Config{})
	n := runs(3, 10)
	row := Row{Scenario: "single server killed and restarted empty while held", Store: "redis", Runs: n}
	for i := range n {
		margin, rec, ok := redisRestartOnce(t, srv, i)
		if !ok {
			row.Violations++
		}
		row.Margins = append(row.Margins, margin)
		row.Recovery = append(row.Recovery, rec)
	}
	row.Note = "TTL 3s, restart 0.2s after kill -9; a waiter in line and a client dialed after the restart; recovery = kill → next holder; margin = holder's loss signal → next holder"
	record(row)
}

func redisRestartOnce(t *testing.T, srv *redistest.Server, run int) (margin, recovery time.Duration, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key := fmt.Sprintf("reliability:restarted:%d:%d", run, time.Now().UnixNano())
	dial := func() *redis.Client {
		c, err := redis.Dial(ctx, srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	hc := dial()
	holder := redis.NewMutex(hc, key, redis.WithTTL(restartTTL))
	waiter := redis.NewMutex(dial(), key, redis.WithTTL(restartTTL))
	held, err := holder.Lock(ctx) // on a new server, after the restart guard's wait
	if err != nil {
		t.Fatal(err)
	}
	var chk batontest.Checker
	spH := chk.Enter(0, held.Token())
	lostAt := make(chan time.Time, 1)
	go func() {
		<-held.Done()
		chk.Leave(spH)
		lostAt <- time.Now()
	}()
	type entry struct {
		who int
		at  time.Time
		err error
	}
	entered := make(chan entry, 2)
	work := func(who int, m *redis.Mutex) {
		l, err := lockRetrying(ctx, m)
		if err != nil {
			entered <- entry{who: who, err: err}
			return
		}
		at := time.Now()
		sp := chk.Enter(who, l.Token())
		hold(l, 300*time.Millisecond)
		chk.Leave(sp)
		entered <- entry{who, at, m.Unlock(ctx)}
	}
	go work(1, waiter)
	await.Until(t, 10*time.Second, "the waiter in line", func() bool {
		n, _ := hc.Redis().ZCard(ctx, key+":queue").Result()
		return n == 1
	})

	srv.Kill()
	killed := time.Now()
	time.Sleep(200 * time.Millisecond) // the outage's length
	restarting := time.Now()
	srv.Restart()
	go work(2, redis.NewMutex(dial(), key, redis.WithTTL(restartTTL)))

	ok = true
	first := time.Time{}
	for range 2 {
		e := <-entered
		if e.err != nil {
			t.Fatalf("run %d: contender %d: %v", run, e.who, e.err)
		}
		// The guard's promise: no lock for a TTL after the restart, which
		// began no earlier than this.
		if d := e.at.Sub(restarting); d < restartTTL {
			ok = false
			t.Errorf("run %d: contender %d held %v after the restart, within the TTL", run, e.who, d)
		}
		if first.IsZero() || e.at.Before(first) {
			first = e.at
		}
	}
	lost := <-lostAt
	if err := holder.Unlock(ctx); !errors.Is(err, baton.ErrLost) {
		t.Errorf("run %d: the holder's Unlock after the restart: %v, want an error wrapping baton.ErrLost", run, err)
	}
	if err := chk.Verify(true); err != nil {
		ok = false
		t.Errorf("run %d: %v", run, err)
	}
	return first.Sub(lost), first.Sub(killed), ok
}

// lockRetrying locks m, trying again after errors (the server down) as
// `baton lock` rejoins its line: after 100 ms, doubling up to 2 s.
func lockRetrying(ctx context.Context, m *redis.Mutex) (*baton.Lease, error) {
	backoff := 100 * time.Millisecond
	var last error
	for range 100 {
		l, err := m.Lock(ctx)
		if err == nil {
			return l, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-time.After(backoff): // retry pace, as a client's
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	return nil, fmt.Errorf("no lock after 100 tries: %w", last)
}
