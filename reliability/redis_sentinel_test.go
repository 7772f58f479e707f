package reliability

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// The Sentinel scenarios (issue 29) SIGKILL the master of one master, two
// replicas and three sentinels, and check every hold with a ledger: two
// holds live at once are an overlap, and a token not above the one
// before it goes backwards. Each runs the same faults on keys locked with
// WithReplicas(2) (the number of replicas), which must show neither (the
// row's violations), and on keys locked without it, whose counts the
// row's note gives: what a failover costs without acknowledgement,
// measured.

// sentinelTTL is the lock ttl of the Sentinel scenarios: short, so that a
// topology started for a scenario is trusted by the restart guard soon;
// longer than a failover (about 2.5 s), so that a holder's lease outlives
// it.
const sentinelTTL = 4 * time.Second

// startSentinel starts a master, two replicas and three sentinels, up for
// sentinelTTL (see redistest.Server.WaitUp).
func startSentinel(t *testing.T) *redistest.Topology {
	t.Helper()
	// go-redis's failover client logs every master it finds and every
	// failed dial.
	quietOnce.Do(func() { goredis.SetLogger(quietLog{}) })
	tp := redistest.StartSentinel(t, 2, 3)
	for _, s := range tp.Servers {
		s.WaitUp(sentinelTTL)
	}
	return tp
}

var quietOnce sync.Once

type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...any) {}

// dialURL dials url and closes the client when the test ends.
func dialURL(t testing.TB, ctx context.Context, url string) *redis.Client {
	t.Helper()
	c, err := redis.Dial(ctx, url)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// within returns a context that ends after d, cancelled when the test ends.
func within(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var sentinelKeys atomic.Int64

// freshKey returns a key no other scenario uses.
func freshKey() string { return fmt.Sprintf("reliability:sentinel:%d", sentinelKeys.Add(1)) }

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
// replica, and returns how long that took; restore, returned, restarts
// the killed server as a replica of the new master (it comes back empty
// and syncs) and waits until the new master has both replicas online
// again.
func failover(t *testing.T, tp *redistest.Topology) (took time.Duration, restore func()) {
	t.Helper()
	old := tp.MasterAddr()
	start := time.Now()
	tp.Server(old).Kill()
	now := tp.WaitFailover(old, 30*time.Second)
	if now == "" {
		t.Fatalf("no failover from %s within 30s", old)
	}
	took = time.Since(start)
	t.Logf("failover from %s to %s in %v", old, now, took.Round(time.Millisecond))
	return took, func() {
		t.Helper()
		start := time.Now()
		tp.Rejoin(old, now)
		if !tp.WaitReplicas(now, 2, 30*time.Second) {
			t.Fatalf("the new master %s has not 2 replicas online within 30s", now)
		}
		t.Logf("%s back as a replica of %s in %v", old, now, time.Since(start).Round(time.Millisecond))
	}
}

// sentinelCounts sums what the ledgers of one lock saw over the runs.
type sentinelCounts struct{ holds, overlaps, backward, runsOverlapping, runsBackward int }

func (c *sentinelCounts) add(l *ledger) {
	h, o, b := l.counts()
	c.holds += h
	c.overlaps += o
	c.backward += b
	if o > 0 {
		c.runsOverlapping++
	}
	if b > 0 {
		c.runsBackward++
	}
}

// violations is what the acknowledged locks must not show.
func (c sentinelCounts) violations() int { return c.overlaps + c.backward }

// TestSentinelFailoverHeld kills the master (a) while a lock is held and
// (b) while a hand-off is under way, the replicas cut off from the master
// (their replication links closed) from before the grant until the kill:
// the grant reached no replica. With WithReplicas(2) the grant is not
// reported held (TryLock fails with ErrNotAcknowledged; the hand-off's
// waiter keeps waiting), and after the failover the lock is granted with
// a higher token. Without it, the holder holds a lock the promoted replica
// never saw.
func TestSentinelFailoverHeld(t *testing.T) {
	independent(t)
	n := runs(1, 10)
	var ack, none [2]sentinelCounts
	var took []time.Duration
	for run := range n {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			r := sentinelHeld(t)
			for i := range 2 {
				ack[i].add(r.ack[i])
				none[i].add(r.none[i])
			}
			took = append(took, r.took)
			t.Logf("without acknowledgement: %v; %v", r.none[0], r.none[1])
		})
	}
	const store = "redis: master, 2 replicas, 3 sentinels"
	for i, what := range []string{"held", "handed off"} {
		record(Row{Scenario: fmt.Sprintf("Sentinel: master SIGKILLed, a lock just %s on it, not replicated (the replicas cut off)", what),
			Store: store, Runs: n, Violations: ack[i].violations(), Recovery: took,
			Note: fmt.Sprintf("TTL 4s; with --replicas 2 (the violations column): the grant not held until acknowledged, %d holds; without, same faults on another lock: a second holder while the first held in %d of %d runs, a token not above the one before in %d of %d (%d holds); recovery = kill → every sentinel names the new master",
				ack[i].holds, none[i].runsOverlapping, n, none[i].runsBackward, n, none[i].holds)})
	}
}

// heldResult is one run of sentinelHeld: the ledgers of (a) and (b), with
// and without acknowledgement, and how long the failover took.
type heldResult struct {
	ack, none [2]*ledger
	took      time.Duration
}

func sentinelHeld(t *testing.T) heldResult {
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
	keyA, keyB := freshKey(), freshKey()
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
	took, restore := failover(t, tp)

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
	return heldResult{ack: [2]*ledger{aAck.ledger, bAck.ledger}, none: [2]*ledger{aNo.ledger, bNo.ledger}, took: took}
}

// TestSentinelFailoverContenders kills the master while 8 contenders loop
// on each of two locks, one acknowledged by both replicas and one not.
func TestSentinelFailoverContenders(t *testing.T) {
	independent(t)
	n := runs(1, 5)
	var ack, none sentinelCounts
	var took []time.Duration
	for run := range n {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			a, b, d := sentinelContenders(t)
			ack.add(a)
			none.add(b)
			took = append(took, d)
			t.Logf("without acknowledgement: %v", b)
		})
	}
	record(Row{Scenario: "Sentinel: master SIGKILLed under 8 contenders", Store: "redis: master, 2 replicas, 3 sentinels", Runs: n,
		Violations: ack.violations(), Recovery: took,
		Note: fmt.Sprintf("TTL 4s; with --replicas 2 (the violations column): %d holds; without, 8 more contenders on another lock, same faults: %d overlaps, %d tokens not above the one before (%d holds); recovery = kill → every sentinel names the new master",
			ack.holds, none.overlaps, none.backward, none.holds)})
}

func sentinelContenders(t *testing.T) (ack, none *ledger, took time.Duration) {
	const contenders = 8
	tp := startSentinel(t)
	ctx := within(t, 90*time.Second)
	key := freshKey()
	ack = &ledger{name: "(c) 8 contenders, acknowledged"}
	none = &ledger{name: "(c) 8 contenders, not acknowledged"}
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
	took, restore := failover(t, tp)
	restore()
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
	return ack, none, took
}
