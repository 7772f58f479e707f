package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// restartedEmptyTTL is the lock ttl of the restart scenarios: long enough
// that the holder's next renewal (every ttl/3) comes well after a waiter
// could take the restarted server's free key, as it did before the
// restart guard covered one server (issue 26).
const restartedEmptyTTL = 3 * time.Second

// TestMutexRestartedEmpty is issue 26's scenario on the library: a holder
// works while its lease lives, a waiter waits in line, and the server is
// killed (kill -9) and restarted empty 0.2 s later. The waiter, which
// retries on errors as `baton lock` does, must not enter its critical
// section while the holder's lease still lives: the restart guard keeps
// the lock off the restarted server for a ttl, past every lease granted
// before the restart. Tokens increase across the restart, the holder's
// own included when it locks again.
func TestMutexRestartedEmpty(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	ch, cw := dial(t, srv), dial(t, srv)
	ctx := within(t, 60*time.Second)
	key := freshKey(t)
	h := redis.NewMutex(ch, key, redis.WithTTL(restartedEmptyTTL))
	w := redis.NewMutex(cw, key, redis.WithTTL(restartedEmptyTTL))
	lh, err := h.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var chk batontest.Checker
	spH := chk.Enter(0, lh.Token())
	hLeft := make(chan time.Time, 1)
	go func() {
		// The holder works until its lease ends: its critical section.
		<-lh.Done()
		chk.Leave(spH)
		hLeft <- time.Now()
	}()
	got := make(chan *baton.Lease, 1)
	errs := make(chan error, 1)
	go func() {
		l, err := lockRetrying(ctx, w)
		if err != nil {
			errs <- err
			return
		}
		got <- l
	}()
	queued(t, ch, key, 1)

	srv.Kill()
	killed := time.Now()
	time.Sleep(200 * time.Millisecond) // the outage's length
	restarting := time.Now()
	srv.Restart()

	var lw *baton.Lease
	select {
	case lw = <-got:
	case err := <-errs:
		t.Fatalf("waiter: %v", err)
	}
	in := time.Now()
	if d := in.Sub(restarting); d < restartedEmptyTTL {
		t.Errorf("the waiter held %v after the restart, within the ttl", d)
	}
	spW := chk.Enter(1, lw.Token())
	time.Sleep(200 * time.Millisecond) // the waiter's critical section
	chk.Leave(spW)
	var left time.Time
	select {
	case left = <-hLeft:
	case <-time.After(2 * restartedEmptyTTL):
		t.Fatalf("the holder's lease still lives %v after the restart", time.Since(killed))
	}
	t.Logf("waiter in at +%v, holder told of the loss at +%v (after the kill)", in.Sub(killed).Round(time.Millisecond), left.Sub(killed).Round(time.Millisecond))
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	mustLost(t, h.Unlock(ctx))
	// The holder, connected all along, locks again: a higher token still.
	lh2, err := h.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sp := chk.Enter(0, lh2.Token())
	chk.Leave(sp)
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := chk.Verify(true); err != nil {
		t.Fatal(err)
	}
}

// lockRetrying locks m, trying again after errors (the server down) as
// `baton lock` rejoins the line (after 100 ms, doubling up to 2 s), until
// ctx ends.
func lockRetrying(ctx context.Context, m *redis.Mutex) (*baton.Lease, error) {
	var last error
	backoff := 100 * time.Millisecond
	for range 100 {
		l, err := m.Lock(ctx)
		if err == nil {
			return l, nil
		}
		if ctx.Err() != nil {
			break
		}
		last = err
		select {
		case <-ctx.Done():
		case <-time.After(backoff): // retry pace, as a client's
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	return nil, fmt.Errorf("no lock: %w (last error: %v)", ctx.Err(), last)
}

// TestMutexRestartGuardSays: on a server up for less than a ttl (fresh,
// or restarted: a client that never saw it before cannot tell), TryLock
// is refused and a Lock whose ctx ends waiting says why, both wrapping
// ErrRestartGuard; once the server has been up for a ttl, both lock.
func TestMutexRestartGuardSays(t *testing.T) {
	const ttl = 2 * time.Second
	srv := redistest.Start(t, redistest.Config{})
	c, ctx, key := dial(t, srv), within(t, 30*time.Second), freshKey(t)
	m := redis.NewMutex(c, key, redis.WithTTL(ttl))
	_, err := m.TryLock(ctx)
	if !errors.Is(err, baton.ErrLocked) || !errors.Is(err, redis.ErrRestartGuard) ||
		!strings.Contains(err.Error(), "less than a TTL") || !strings.Contains(err.Error(), "locks on it wait until a TTL (2s) has passed") {
		t.Fatalf("TryLock on a server up for less than a ttl: %v", err)
	}
	if g := c.RestartGuard(ttl); !errors.Is(g, redis.ErrRestartGuard) {
		t.Fatalf("RestartGuard: %v", g)
	}
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = m.Lock(sctx)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, redis.ErrRestartGuard) {
		t.Fatalf("Lock whose ctx ended under the restart guard: %v", err)
	}
	if n, err := c.Redis().Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Fatalf("the key was left behind by a Lock given up under the guard (%d, %v)", n, err)
	}
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartGuard(ttl); err != nil {
		t.Fatalf("RestartGuard once held: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(ctx); err != nil {
		t.Fatalf("TryLock on a server up for a ttl: %v", err)
	}
	_ = m.Unlock(ctx)
}

// TestMutexTokensNeverGoBackForAClient: a server restarted empty reseeds
// the token counter from its clock; should that clock have gone back
// (here: the counter set below the last token), a Client that was granted
// a token on the key before is still granted a higher one, on the quick
// path (SET NX + INCR) and on the line's.
func TestMutexTokensNeverGoBackForAClient(t *testing.T) {
	const ttl = time.Second
	srv, c, ctx, key := oneServer(t, 30*time.Second)
	m := redis.NewMutex(c, key, redis.WithTTL(ttl))
	last := int64(0)
	check := func(what string, l *baton.Lease) {
		t.Helper()
		if l.Token() <= last {
			t.Fatalf("%s: token %d, not above the %d granted before", what, l.Token(), last)
		}
		last = l.Token()
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// lower sets the counter as a server would reseed it from a clock a
	// minute behind.
	lower := func() {
		t.Helper()
		behind := last - int64(time.Minute/time.Microsecond)
		if err := c.Redis().Set(ctx, key+":token", behind, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("first", l)
	lower()
	if l, err = m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	check("quick path", l)

	// The line: another client holds, ours waits and is handed the lock
	// by a release that draws its token from the lowered counter.
	other := redis.NewMutex(dial(t, srv), key, redis.WithTTL(ttl))
	if _, err := other.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan *baton.Lease, 1)
	errs := make(chan error, 1)
	go func() {
		l, err := m.Lock(ctx)
		if err != nil {
			errs <- err
			return
		}
		got <- l
	}()
	queued(t, c, key, 1)
	lower()
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case l = <-got:
	case err := <-errs:
		t.Fatal(err)
	}
	check("hand-off", l)
}
