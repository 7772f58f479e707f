package redis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// The Sentinel failover tests SIGKILL the master of one master, two
// replicas and three sentinels, and check every hold with a ledger: two
// holds live at once are an overlap, and a token not above the one
// before it goes backwards. Each runs the same faults on keys locked with
// WithReplicas(2) (the number of replicas), which must show neither, and
// on keys locked without it, whose counts are logged: what a failover
// costs without acknowledgement, measured (docs/RELIABILITY.md).

// ledger records the holds of one lock, in the order they were granted,
// counting overlaps and tokens not above the one before, and in a
// batontest.Checker, whose Verify the acknowledged locks must pass.
type ledger struct {
	name string
	chk  batontest.Checker

	mu       sync.Mutex
	live     int
	holds    int
	overlaps int
	backward int
	tokens   []int64
}

// enter records a hold granted with tok; leave, its end (Done closed or
// released).
func (l *ledger) enter(tok int64) batontest.Span {
	sp := l.chk.Enter(0, tok)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live++
	l.holds++
	if l.live > 1 {
		l.overlaps++
	}
	if n := len(l.tokens); n > 0 && tok <= l.tokens[n-1] {
		l.backward++
	}
	l.tokens = append(l.tokens, tok)
	return sp
}

func (l *ledger) leave(sp batontest.Span) {
	l.mu.Lock()
	l.live--
	l.mu.Unlock()
	l.chk.Leave(sp)
}

func (l *ledger) counts() (holds, overlaps, backward int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holds, l.overlaps, l.backward
}

func (l *ledger) String() string {
	h, o, b := l.counts()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := fmt.Sprintf("%s: %d holds, %d overlaps, %d tokens not above the one before", l.name, h, o, b)
	if len(l.tokens) <= 5 {
		s += fmt.Sprintf(" (tokens %v)", l.tokens)
	}
	return s
}

// mustClean fails the test unless l saw holds and no overlap or backward
// token.
func (l *ledger) mustClean(t *testing.T) {
	t.Helper()
	h, o, b := l.counts()
	if h == 0 || o != 0 || b != 0 {
		t.Errorf("with WithReplicas(2): %v", l)
	}
	if err := l.chk.Verify(true); err != nil {
		t.Errorf("with WithReplicas(2): %s: %v", l.name, err)
	}
}

// cycle takes m, holds it for hold (or until it is lost), and releases it,
// recording the hold in l.
func cycle(ctx context.Context, m *redis.Mutex, l *ledger, hold time.Duration) error {
	lease, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	sp := l.enter(lease.Token())
	t := time.NewTimer(hold)
	select {
	case <-t.C:
	case <-lease.Done():
		t.Stop()
	}
	l.leave(sp)
	return m.Unlock(context.WithoutCancel(ctx))
}

// failover SIGKILLs the master and waits for the sentinels to promote a
// replica; restore, returned, restarts the killed server as a replica of
// the new master (it comes back empty and syncs) and waits until the new
// master has both replicas online again.
func failover(t *testing.T, tp *redistest.Topology) (restore func()) {
	t.Helper()
	old := tp.MasterAddr()
	start := time.Now()
	tp.Server(old).Kill()
	now := tp.WaitFailover(old, 30*time.Second)
	if now == "" {
		t.Fatalf("no failover from %s within 30s", old)
	}
	t.Logf("failover from %s to %s in %v", old, now, time.Since(start).Round(time.Millisecond))
	return func() {
		t.Helper()
		start := time.Now()
		tp.Rejoin(old, now)
		if !tp.WaitReplicas(now, 2, 30*time.Second) {
			t.Fatalf("the new master %s has not 2 replicas online within 30s", now)
		}
		t.Logf("%s back as a replica of %s in %v", old, now, time.Since(start).Round(time.Millisecond))
	}
}

// runs is how many times the no-acknowledgement measurements repeat
// (BATON_SENTINEL_RUNS, default 1).
func runs() int {
	if n, err := strconv.Atoi(os.Getenv("BATON_SENTINEL_RUNS")); err == nil && n > 0 {
		return n
	}
	return 1
}

// TestSentinelFailoverHeld kills the master (a) while a lock is held and
// (b) while a hand-off is under way, the replicas cut off from the master
// (their replication links closed) from before the grant until the kill: the grant reached no
// replica. With WithReplicas(2) the grant is not reported held (TryLock
// fails with ErrNotAcknowledged; the hand-off's waiter keeps waiting),
// and after the failover the lock is granted with a higher token. Without
// it, the holder holds a lock the promoted replica never saw.
func TestSentinelFailoverHeld(t *testing.T) {
	t.Parallel() // with the other Sentinel tests, each on its own servers
	var total [2]struct{ overlaps, backward, holds int }
	for run := range runs() {
		a, b := sentinelHeld(t)
		for i, l := range []*ledger{a, b} {
			h, o, bk := l.counts()
			total[i].holds += h
			total[i].overlaps += o
			total[i].backward += bk
		}
		t.Logf("run %d without acknowledgement: %v; %v", run+1, a, b)
	}
	t.Logf("without acknowledgement, over %d runs: (a) held: %+v; (b) hand-off: %+v", runs(), total[0], total[1])
}

func sentinelHeld(t *testing.T) (noAckHeld, noAckHandoff *ledger) {
	tp := startSentinel(t)
	ctx := within(t, 90*time.Second)
	opts := func(n int) []redis.Option {
		return []redis.Option{redis.WithTTL(sentinelTTL), redis.WithReplicas(n)}
	}
	type lock struct {
		key      string
		replicas int
		ledger   *ledger
	}
	keyA, keyB := freshKey(t), freshKey(t)
	var (
		aAck   = lock{keyA + ":ack", 2, &ledger{name: "(a) held, acknowledged"}}
		aNo    = lock{keyA + ":none", 0, &ledger{name: "(a) held, not acknowledged"}}
		bAck   = lock{keyB + ":ack", 2, &ledger{name: "(b) hand-off, acknowledged"}}
		bNo    = lock{keyB + ":none", 0, &ledger{name: "(b) hand-off, not acknowledged"}}
		holder = dialURL(t, ctx, tp.URL())
		waiter = dialURL(t, ctx, tp.URL())
		watch  = goredis.NewClient(&goredis.Options{Addr: tp.MasterAddr()})
	)
	defer watch.Close()

	// (a): a first hold, acknowledged by both replicas, draws a token.
	for _, lk := range []lock{aAck, aNo} {
		if err := cycle(ctx, redis.NewMutex(holder, lk.key, opts(2)...), lk.ledger, 0); err != nil {
			t.Fatalf("%s: first hold: %v", lk.ledger.name, err)
		}
	}
	// (b): a holder, and a waiter in line behind it.
	type result struct {
		lock
		err error
	}
	waited := make(chan result, 2)
	var wg sync.WaitGroup
	defer wg.Wait()
	wctx, stopWaiters := context.WithCancel(ctx)
	defer stopWaiters()
	holders := map[string]*redis.Mutex{}
	spans := map[string]batontest.Span{}
	for _, lk := range []lock{bAck, bNo} {
		m := redis.NewMutex(holder, lk.key, opts(lk.replicas)...)
		l, err := m.Lock(ctx)
		if err != nil {
			t.Fatalf("%s: holder: %v", lk.ledger.name, err)
		}
		spans[lk.key] = lk.ledger.enter(l.Token())
		holders[lk.key] = m
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The waiter keeps at it until it holds once (the retries after
			// the failover's errors included).
			w := redis.NewMutex(waiter, lk.key, opts(lk.replicas)...)
			var err error
			for wctx.Err() == nil {
				if err = cycle(wctx, w, lk.ledger, 10*time.Millisecond); err == nil {
					break
				}
				select {
				case <-wctx.Done():
				case <-time.After(sentinelTTL / 20): // retry pace after an error
				}
			}
			waited <- result{lk, err}
		}()
	}
	await.Until(t, 10*time.Second, "both waiters in line", func() bool {
		return watch.ZCard(ctx, bAck.key+":queue").Val() == 1 && watch.ZCard(ctx, bNo.key+":queue").Val() == 1
	})

	// Cut the replicas off: what the master writes now reaches none.
	tp.CutReplicas()
	mAck := redis.NewMutex(holder, aAck.key, opts(2)...)
	if _, err := mAck.TryLock(ctx); !errors.Is(err, redis.ErrNotAcknowledged) {
		t.Errorf("(a) TryLock with the replicas cut off: %v, want ErrNotAcknowledged", err)
	}
	mNo := redis.NewMutex(holder, aNo.key, opts(0)...)
	held, err := mNo.TryLock(ctx)
	if err != nil {
		t.Fatalf("(a) TryLock without acknowledgement: %v", err)
	}
	heldSpan := aNo.ledger.enter(held.Token())
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-held.Done():
		case <-ctx.Done():
		}
		aNo.ledger.leave(heldSpan)
	}()
	for _, lk := range []lock{bAck, bNo} {
		lk.ledger.leave(spans[lk.key])
		if err := holders[lk.key].Unlock(ctx); err != nil {
			t.Fatalf("%s: holder's Unlock: %v", lk.ledger.name, err)
		}
	}
	// The hand-off is under way: the unacknowledged waiter holds as soon
	// as it is woken; the acknowledged one waits for the replicas, which
	// stay cut off for two of its acknowledgement timeouts (the fault's
	// length).
	fault := time.NewTimer(2 * time.Second)
	select {
	case r := <-waited:
		waited <- r
	case <-fault.C:
	}
	fault.Stop()
	restore := failover(t, tp)

	// A client that never saw the old master (a new process) takes each
	// lock: at once where nobody waits for acknowledgements, then, once
	// both replicas are back, where WithReplicas(2) does.
	fresh := dialURL(t, ctx, tp.URL())
	for i, lk := range []lock{aNo, bNo, aAck, bAck} {
		if i == 2 {
			restore()
		}
		if err := cycle(ctx, redis.NewMutex(fresh, lk.key, opts(lk.replicas)...), lk.ledger, 0); err != nil {
			t.Errorf("%s: after the failover: %v", lk.ledger.name, err)
		}
	}
	for range 2 {
		r := <-waited
		if r.err != nil {
			t.Errorf("%s: the waiter never held: %v", r.ledger.name, r.err)
		}
	}
	stopWaiters()
	wg.Wait()
	_ = mNo.Unlock(ctx)
	aAck.ledger.mustClean(t)
	bAck.ledger.mustClean(t)
	t.Logf("%v; %v", aAck.ledger, bAck.ledger)
	return aNo.ledger, bNo.ledger
}

// TestSentinelFailoverContenders kills the master while 8 contenders loop
// on each of two locks, one acknowledged by both replicas and one not.
func TestSentinelFailoverContenders(t *testing.T) {
	t.Parallel() // with the other Sentinel tests, each on its own servers
	var none struct{ overlaps, backward, holds int }
	for run := range runs() {
		l := sentinelContenders(t)
		h, o, b := l.counts()
		none.holds += h
		none.overlaps += o
		none.backward += b
		t.Logf("run %d: %v", run+1, l)
	}
	t.Logf("without acknowledgement, over %d runs: (c) 8 contenders: %+v", runs(), none)
}

func sentinelContenders(t *testing.T) *ledger {
	const contenders = 8
	tp := startSentinel(t)
	ctx := within(t, 90*time.Second)
	key := freshKey(t)
	ack := &ledger{name: "(c) 8 contenders, acknowledged"}
	none := &ledger{name: "(c) 8 contenders, not acknowledged"}
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	errs := map[string]int{}
	for i := range 2 * contenders {
		c := dialURL(t, ctx, tp.URL())
		l, k, n := ack, key+":ack", 2
		if i%2 == 1 {
			l, k, n = none, key+":none", 0
		}
		m := redis.NewMutex(c, k, redis.WithTTL(sentinelTTL), redis.WithReplicas(n))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lctx.Err() == nil {
				if err := cycle(lctx, m, l, 5*time.Millisecond); err != nil && lctx.Err() == nil {
					mu.Lock()
					errs[fmt.Sprintf("%T", errors.Unwrap(err))]++
					mu.Unlock()
					select {
					case <-lctx.Done():
					case <-time.After(sentinelTTL / 20): // retry pace after an error
					}
				}
			}
		}()
	}
	// Kill the master once both locks have changed hands under load.
	await.Until(t, 20*time.Second, "holds on both locks", func() bool {
		a, _, _ := ack.counts()
		b, _, _ := none.counts()
		return a >= 20 && b >= 20
	})
	before, _, _ := ack.counts()
	failover(t, tp)()
	// Run on until the acknowledged lock changed hands 20 more times on
	// the new master (after the restart guard's ttl: every contender saw
	// the old master).
	await.Until(t, 30*time.Second, "holds after the failover", func() bool {
		a, _, _ := ack.counts()
		return a >= before+20
	})
	stop()
	wg.Wait()
	mu.Lock()
	t.Logf("errors seen by the contenders: %v", errs)
	mu.Unlock()
	ack.mustClean(t)
	t.Logf("%v", ack)
	return none
}
