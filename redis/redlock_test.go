package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// rlTTL is short so tests are quick; masters count only once they have
// been up that long, so each test's first Lock waits about that long.
const rlTTL = time.Second

func quorum(t testing.TB, srvs []*redistest.Server) *redis.Quorum {
	t.Helper()
	var urls []string
	for _, s := range srvs {
		urls = append(urls, s.URL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := redis.DialRedlock(ctx, urls)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// TestRedlockRenews: a holder keeps the lock well past its ttl (twice
// over), renewed on the masters, and Held says so until Unlock.
func TestRedlockRenews(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	// Both quorums read the new masters' uptime now: the restart guard
	// lets both lock once the masters have been up for a ttl.
	q, qb := quorum(t, srvs), quorum(t, srvs)
	ctx := within(t, 20*time.Second)
	key := freshKey(t)
	a := redis.NewRedlock(q, key, redis.WithTTL(rlTTL))
	start := time.Now()
	l, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Key() != key || !a.Held() {
		t.Fatalf("lease: key %q held %v", l.Key(), a.Held())
	}
	b := redis.NewRedlock(qb, key, redis.WithTTL(rlTTL))
	renewedPast(t, a, start, 2*rlTTL, func() {})
	if l.Err() != nil || !a.Held() {
		t.Fatalf("after renewals: lease %v, held %v", l.Err(), a.Held())
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock on a renewed Redlock: %v", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Held() {
		t.Fatal("Held after Unlock")
	}
}

func TestRedlockTwoOfFiveDown(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	q := quorum(t, srvs)
	ctx := within(t, 20*time.Second)
	srvs[1].Kill()
	srvs[3].Kill()
	key := freshKey(t)
	a := redis.NewRedlock(q, key, redis.WithTTL(rlTTL))
	if _, err := a.Lock(ctx); err != nil {
		t.Fatalf("Lock with 3 of 5 up: %v", err)
	}
	b := redis.NewRedlock(q, key, redis.WithTTL(rlTTL))
	if _, err := b.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock: %v", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	_ = b.Unlock(ctx)
}

// TestRedlockFrozenMaster: a master that accepts connections but never
// answers (SIGSTOP) holds up neither DialRedlock, nor a Lock, nor Close
// beyond its connection attempt's bound (a second, not go-redis's 5 s
// read timeout), and a Lock, which it joins in the background, waits for
// it no longer than the per-instance timeout.
func TestRedlockFrozenMaster(t *testing.T) {
	srvs := redistest.StartN(t, 3, redistest.Config{})
	srvs[2].Pause()
	t.Cleanup(srvs[2].Resume)
	var urls []string
	for _, s := range srvs {
		urls = append(urls, s.URL())
	}
	ctx := within(t, 30*time.Second)
	bound := func(what string, d, max time.Duration) {
		t.Helper()
		if d > max {
			t.Errorf("%s took %v with one master frozen, want at most %v", what, d, max)
		}
	}
	start := time.Now()
	q, err := redis.DialRedlock(ctx, urls)
	if err != nil {
		t.Fatal(err)
	}
	bound("DialRedlock", time.Since(start), 3*time.Second)
	// The first Lock may also wait for the masters to have been up a ttl
	// (the restart guard), within the bound.
	a := redis.NewRedlock(q, freshKey(t), redis.WithTTL(rlTTL))
	for i := range 3 {
		start = time.Now()
		if _, err := a.Lock(ctx); err != nil {
			t.Fatalf("Lock %d with 2 of 3 masters answering: %v", i, err)
		}
		bound("Lock", time.Since(start), 2*time.Second)
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	start = time.Now()
	_ = q.Close()
	bound("Close", time.Since(start), 3*time.Second)
}

func TestRedlockThreeOfFiveDown(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	q := quorum(t, srvs)
	ctx := within(t, 20*time.Second)
	for _, i := range []int{0, 2, 4} {
		srvs[i].Kill()
	}
	a := redis.NewRedlock(q, freshKey(t), redis.WithTTL(rlTTL))
	start := time.Now()
	_, err := a.Lock(ctx)
	if !errors.Is(err, redis.ErrNoQuorum) || !strings.Contains(err.Error(), "2 of 5 answered, need 3") {
		t.Fatalf("Lock with 2 of 5 up: want a clear no-quorum error, got %v", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("Lock with 2 of 5 up took %v to fail", el)
	}
	if _, err := a.TryLock(ctx); !errors.Is(err, redis.ErrNoQuorum) {
		t.Fatalf("TryLock with 2 of 5 up: %v", err)
	}
}

func TestRedlockLostWhenMajorityDies(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	q := quorum(t, srvs)
	ctx := within(t, 20*time.Second)
	a := redis.NewRedlock(q, freshKey(t), redis.WithTTL(rlTTL))
	l, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for _, i := range []int{0, 1, 2} {
		srvs[i].Kill()
	}
	waitDone(t, l, 5*time.Second)
	mustLost(t, l.Err())
	if el := time.Since(killed); el > rlTTL+400*time.Millisecond {
		t.Fatalf("lost signal %v after the kill, later than the ttl", el)
	}
	mustLost(t, a.Unlock(ctx))
}

// TestRedlockRestartGuard: A holds on exactly 3 of 5 masters; one of them
// restarts empty. B could then win 3 votes (the restarted master and the
// two free ones) while A still believes it holds. The restart guard keeps
// the restarted master out of B's quorum, so B gets the lock only after
// A's lease has ended.
func TestRedlockRestartGuard(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	ctx := within(t, 30*time.Second)
	key := freshKey(t)
	qa, qb := quorum(t, srvs), quorum(t, srvs)
	b := redis.NewRedlock(qb, key, redis.WithTTL(2*time.Second))
	// Masters 3 and 4 are busy with a foreign holder while A acquires.
	for _, s := range srvs[3:] {
		c := dial(t, s)
		if err := c.Redis().Set(ctx, key, "foreign", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	a := redis.NewRedlock(qa, key, redis.WithTTL(2*time.Second))
	la, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// B has seen every master's run_id.
	if _, err := b.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("B TryLock while A holds: %v", err)
	}
	for _, s := range srvs[3:] {
		if err := dial(t, s).Redis().Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	srvs[0].Restart()

	// C never saw master 0's old run_id: the uptime rule keeps it out
	// (master 0 has been up for less than a ttl).
	c := redis.NewRedlock(quorum(t, srvs), key, redis.WithTTL(2*time.Second))
	if _, err := c.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("C TryLock with a freshly restarted master: %v", err)
	}

	var chk batontest.Checker
	spA := chk.Enter(0, 0)
	aEnded := make(chan time.Time, 1)
	go func() { <-la.Done(); aEnded <- time.Now() }()
	lb, err := b.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := time.Now()
	var endA time.Time
	select {
	case endA = <-aEnded:
	default:
		t.Fatalf("B acquired while A's lease is live (A: %v)", la.Err())
	}
	if got.Before(endA) {
		t.Fatalf("B acquired at %v, before A's lease ended at %v", got, endA)
	}
	mustLost(t, la.Err())
	chk.Leave(spA)
	spB := chk.Enter(1, lb.Token())
	chk.Leave(spB)
	if err := chk.Verify(false); err != nil {
		t.Fatal(err)
	}
	_ = b.Unlock(ctx)
}

func TestDialRedlock(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	ctx := within(t, 20*time.Second)
	var urls []string
	for _, s := range srvs {
		urls = append(urls, s.URL())
	}
	srvs[0].Kill()
	srvs[1].Kill()
	q, err := redis.DialRedlock(ctx, urls)
	if err != nil {
		t.Fatalf("DialRedlock with 3 of 5 up: %v", err)
	}
	_ = q.Close()
	srvs[2].Kill()
	if _, err := redis.DialRedlock(ctx, urls); !errors.Is(err, redis.ErrNoQuorum) || !strings.Contains(err.Error(), "2 of 5 answered, need 3") {
		t.Fatalf("DialRedlock with 2 of 5 up: %v", err)
	}
}

// A Redlock hold whose Quorum is closed under it ends as lost, at the
// latest when its validity runs out: its renewals on the closed Quorum are
// refused (and, under -race, do not race Close's wait for rounds in
// flight).
func TestRedlockQuorumClosedWhileHeld(t *testing.T) {
	srvs := redistest.StartN(t, 3, redistest.Config{})
	ctx := within(t, 20*time.Second)
	const ttl = 600 * time.Millisecond
	q := quorum(t, srvs)
	l, err := redis.NewRedlock(q, freshKey(t), redis.WithTTL(ttl)).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, l, 5*time.Second)
	if !errors.Is(l.Err(), baton.ErrLost) {
		t.Fatalf("lease error %v; want ErrLost", l.Err())
	}
}
