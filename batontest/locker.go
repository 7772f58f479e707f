package batontest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// LockerHarness is how RunLocker drives one lock type: baton.Mutex on a
// store, redis.Mutex, redis.Redlock, or any other baton.Locker.
type LockerHarness struct {
	// Name names the lock type in test output.
	Name string
	// New makes a fresh lock and n handles on it, each its own holder (on
	// a session, a client or a quorum of its own), with the given TTL: 0
	// means the type's short test TTL, about a second. It registers its
	// own cleanup.
	New func(t *testing.T, n int, ttl time.Duration) LockerSet
	// Reentrant says what Lock and TryLock do on a handle that holds the
	// lock: true, they return its lease one level up (one Unlock per
	// acquisition); false, they find the lock taken, as another handle
	// would.
	Reentrant bool
	// Tokens says the leases carry fencing tokens, strictly increasing
	// from one acquisition to the next; false, Token is always 0
	// (redis.Redlock).
	Tokens bool
}

// LockerSet is one fresh lock and the handles on it that New made.
type LockerSet struct {
	// Lockers are the handles, each its own holder.
	Lockers []baton.Locker
	// Contenders returns how many contenders the store has for the lock:
	// the holder and every waiter in line (on a quorum, the most any
	// master has). A lock nobody holds or waits for has none.
	Contenders func(t *testing.T) int
	// Cut cuts the holder behind Lockers[i] off the store (both
	// directions) until heal is called: its lease must end as lost before
	// anyone else can take the lock.
	Cut func(t *testing.T, i int) (heal func())
}

// lockerSuite lists the tests of the baton.Locker contract.
var lockerSuite = []struct {
	name string
	fn   func(t *testing.T, h LockerHarness)
}{
	{"Exclusion", testLockerExclusion},
	{"MonotonicTokens", testLockerTokens},
	{"TryLock", testLockerTryLock},
	{"Reentrancy", testLockerReentrancy},
	{"SharedHandle", testLockerShared},
	{"CancelLeavesNothing", testLockerCancel},
	{"CancelAtHandOff", testLockerCancelAtHandOff},
	{"UnlockCancelledCtx", testLockerUnlockCancelled},
	{"LossBeforeTakeover", testLockerLoss},
}

// RunLocker runs the suite of the baton.Locker contract against one lock
// type: mutual exclusion under load checked by a Checker over critical
// sections of real width, fencing tokens that only increase, TryLock,
// re-entrancy as the type defines it, a cancelled or timed-out Lock that
// leaves nothing on the store, Unlock with a cancelled ctx, and a holder
// cut off the store told of its loss before anyone else takes the lock.
func RunLocker(t *testing.T, h LockerHarness) {
	for _, tc := range lockerSuite {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

// section stays inside a critical section for 1 to 3 ms, leaving early if
// l ends: wide enough that a second holder let in early overlaps it.
func section(l *baton.Lease) {
	t := time.NewTimer(time.Millisecond + time.Duration(rand.IntN(2001))*time.Microsecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.Done():
	}
}

// contenders waits until the store has want contenders for the lock.
func (s LockerSet) contenders(t *testing.T, want int, what string) {
	t.Helper()
	if !settles(func() bool { return s.Contenders(t) == want }) {
		t.Fatalf("%s: %d contenders on the store, want %d", what, s.Contenders(t), want)
	}
}

// Several holders, each through many cycles: no two critical sections
// overlap, tokens increase from each section to the next, and nothing is
// left on the store.
func testLockerExclusion(t *testing.T, h LockerHarness) {
	ctx := testCtx(t)
	const clients = 6
	cycles := 30
	if testing.Short() {
		cycles = 10
	}
	s := h.New(t, clients, LoadTTL)
	sections(t, ctx, h, s.Lockers, cycles)
	s.contenders(t, 0, "after every Unlock")
}

// sections runs a goroutine per entry of lockers (the same Locker may
// appear more than once), each through cycles of Lock, a critical section
// of real width and Unlock, and fails t if two sections overlap, a lease
// ends inside its section, tokens do not increase as h says, or a section
// is missing.
func sections(t *testing.T, ctx context.Context, h LockerHarness, lockers []baton.Locker, cycles int) {
	var chk Checker
	var wg sync.WaitGroup
	for i, m := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range cycles {
				l, err := m.Lock(ctx)
				if err != nil {
					t.Errorf("locker %d: Lock: %v", i, err)
					return
				}
				sp := chk.Enter(i, l.Token())
				section(l)
				chk.Leave(sp)
				if err := l.Err(); err != nil {
					t.Errorf("locker %d: lease ended inside its section: %v", i, err)
				}
				if err := m.Unlock(ctx); err != nil {
					t.Errorf("locker %d: Unlock: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := chk.Verify(h.Tokens); err != nil {
		t.Fatal(err)
	}
	if got := len(chk.Spans()); got != len(lockers)*cycles {
		t.Fatalf("%d critical sections, want %d", got, len(lockers)*cycles)
	}
}

// Acquisitions one after another, by Lock and TryLock on several handles,
// carry strictly increasing tokens (all 0 for a type without them), the
// same token at every re-entrant level.
func testLockerTokens(t *testing.T, h LockerHarness) {
	ctx := testCtx(t)
	s := h.New(t, 3, LoadTTL)
	var last int64
	for i := range 9 {
		m := s.Lockers[i%3]
		take := m.Lock
		if i%2 == 1 {
			take = m.TryLock
		}
		l, err := take(ctx)
		if err != nil {
			t.Fatalf("acquisition %d: %v", i, err)
		}
		switch tok := l.Token(); {
		case !h.Tokens && tok != 0:
			t.Fatalf("acquisition %d: token %d from a lock without tokens", i, tok)
		case h.Tokens && tok <= last:
			t.Fatalf("acquisition %d: token %d after %d", i, tok, last)
		}
		last = l.Token()
		if err := m.Unlock(ctx); err != nil {
			t.Fatalf("acquisition %d: Unlock: %v", i, err)
		}
	}
}

// TryLock takes a free lock, fails with ErrLocked while another holds it
// (leaving nothing in line, and the holder undisturbed), and takes it once
// released; Unlock without a hold is ErrNotHeld.
func testLockerTryLock(t *testing.T, h LockerHarness) {
	ctx := testCtx(t)
	s := h.New(t, 2, LoadTTL)
	a, b := s.Lockers[0], s.Lockers[1]
	la, err := a.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock on a free lock: %v", err)
	}
	for i := range 3 {
		if _, err := b.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
			t.Fatalf("TryLock %d on a held lock: %v, want ErrLocked", i, err)
		}
	}
	if la.Err() != nil {
		t.Fatalf("the holder's lease ended by another's TryLock: %v", la.Err())
	}
	s.contenders(t, 1, "after failed TryLocks")
	if err := b.Unlock(ctx); !errors.Is(err, baton.ErrNotHeld) {
		t.Fatalf("Unlock after a failed TryLock: %v, want ErrNotHeld", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(la.Err(), baton.ErrNotHeld) {
		t.Fatalf("lease after Unlock: %v, want ErrNotHeld", la.Err())
	}
	lb, err := b.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock once released: %v", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); !errors.Is(err, baton.ErrNotHeld) {
		t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
	}
	if !errors.Is(lb.Err(), baton.ErrNotHeld) {
		t.Fatalf("lease after Unlock: %v, want ErrNotHeld", lb.Err())
	}
	s.contenders(t, 0, "after the last Unlock")
}

// A handle that holds and asks again: a re-entrant type gives the same
// lease one level up, held until the last level is released; any other
// finds the lock taken (Lock waits until ctx ends, TryLock fails with
// ErrLocked) and keeps its hold.
func testLockerReentrancy(t *testing.T, h LockerHarness) {
	ctx := testCtx(t)
	s := h.New(t, 2, LoadTTL)
	a, b := s.Lockers[0], s.Lockers[1]
	l, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Reentrant {
		if _, err := a.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
			t.Fatalf("TryLock on the handle that holds: %v, want ErrLocked", err)
		}
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if _, err := a.Lock(wctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock on the handle that holds: %v, want it to wait until ctx ends", err)
		}
		if l.Err() != nil {
			t.Fatalf("the hold ended by a second Lock on its handle: %v", l.Err())
		}
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		s.contenders(t, 0, "after Unlock")
		return
	}
	for i, take := range []func(context.Context) (*baton.Lease, error){a.Lock, a.TryLock} {
		again, err := take(ctx)
		if err != nil || again != l {
			t.Fatalf("re-entrant acquisition %d: %v, same lease %v", i, err, again == l)
		}
	}
	for level := 3; level > 1; level-- {
		if err := a.Unlock(ctx); err != nil {
			t.Fatalf("Unlock at level %d: %v", level, err)
		}
		if l.Err() != nil {
			t.Fatalf("lease ended at level %d of 3: %v", level, l.Err())
		}
		if _, err := b.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
			t.Fatalf("another's TryLock with the lock held at level %d: %v, want ErrLocked", level-1, err)
		}
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(l.Err(), baton.ErrNotHeld) {
		t.Fatalf("lease after the last Unlock: %v, want ErrNotHeld", l.Err())
	}
	if _, err := b.TryLock(ctx); err != nil {
		t.Fatalf("TryLock once every level is released: %v", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// One handle shared by several goroutines lets one in at a time, as a
// sync.Mutex does, on a type that is not re-entrant: each goroutine's
// Lock waits for the Unlock of the hold before. (A re-entrant handle is
// one holder whose calls nest: goroutines sharing it are let in at once,
// as the type defines it, so there is nothing to check.)
func testLockerShared(t *testing.T, h LockerHarness) {
	if h.Reentrant {
		return
	}
	ctx := testCtx(t)
	const goroutines = 4
	cycles := 10
	s := h.New(t, 1, LoadTTL)
	sections(t, ctx, h, slices.Repeat([]baton.Locker{s.Lockers[0]}, goroutines), cycles)
	s.contenders(t, 0, "after every Unlock")
}

// A waiting Lock whose ctx is cancelled, or whose deadline passes,
// returns ctx's error and leaves nothing on the store: the next Lock
// after the holder's release is not held up by it.
func testLockerCancel(t *testing.T, h LockerHarness) {
	ctx := testCtx(t)
	s := h.New(t, 3, LoadTTL)
	holder, waiter, next := s.Lockers[0], s.Lockers[1], s.Lockers[2]
	if _, err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() {
		_, err := waiter.Lock(wctx)
		res <- err
	}()
	s.contenders(t, 2, "a Lock waiting")
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock: %v, want context.Canceled", err)
	}
	s.contenders(t, 1, "after the cancelled Lock")

	dctx, dcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer dcancel()
	if _, err := waiter.Lock(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed-out Lock: %v, want context.DeadlineExceeded", err)
	}
	s.contenders(t, 1, "after the timed-out Lock")
	if err := waiter.Unlock(ctx); !errors.Is(err, baton.ErrNotHeld) {
		t.Fatalf("Unlock after a cancelled Lock: %v, want ErrNotHeld", err)
	}

	got := make(chan error, 1)
	go func() {
		_, err := next.Lock(ctx)
		got <- err
	}()
	s.contenders(t, 2, "the next Lock waiting")
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Lock after the cancelled ones: %v", err)
	}
	if err := next.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	s.contenders(t, 0, "after the last Unlock")
}

// A waiter cancelled just as the release makes it the next holder either
// holds (and releases) or leaves nothing: the waiter behind it gets the
// lock either way.
func testLockerCancelAtHandOff(t *testing.T, h LockerHarness) {
	ctx := testCtx(t)
	s := h.New(t, 3, LoadTTL)
	holder, head, behind := s.Lockers[0], s.Lockers[1], s.Lockers[2]
	for round := range 3 {
		if _, err := holder.Lock(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		hctx, cancel := context.WithCancel(ctx)
		headErr, behindErr := make(chan error, 1), make(chan error, 1)
		go func() {
			_, err := head.Lock(hctx)
			headErr <- err
		}()
		s.contenders(t, 2, fmt.Sprintf("round %d: the head of the line waiting", round))
		go func() {
			_, err := behind.Lock(ctx)
			behindErr <- err
		}()
		s.contenders(t, 3, fmt.Sprintf("round %d: two waiting", round))
		if err := holder.Unlock(ctx); err != nil {
			cancel()
			t.Fatalf("round %d: %v", round, err)
		}
		cancel()
		switch err := <-headErr; {
		case err == nil:
			if err := head.Unlock(ctx); err != nil {
				t.Fatalf("round %d: the head's Unlock: %v", round, err)
			}
		case !errors.Is(err, context.Canceled):
			t.Fatalf("round %d: cancelled head: %v, want context.Canceled", round, err)
		}
		if err := <-behindErr; err != nil {
			t.Fatalf("round %d: the waiter behind a cancelled head: %v", round, err)
		}
		if err := behind.Unlock(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		s.contenders(t, 0, fmt.Sprintf("round %d: after the last Unlock", round))
	}
}

// Unlock with a ctx already cancelled still releases on the store: the
// lease ends, nothing is left, and another handle takes the lock at once.
func testLockerUnlockCancelled(t *testing.T, h LockerHarness) {
	ctx := testCtx(t)
	s := h.New(t, 2, LoadTTL)
	a, b := s.Lockers[0], s.Lockers[1]
	for round := range 3 {
		l, err := a.Lock(ctx)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := a.Unlock(cancelled()); err != nil {
			t.Fatalf("round %d: Unlock with a cancelled ctx: %v", round, err)
		}
		if !errors.Is(l.Err(), baton.ErrNotHeld) {
			t.Fatalf("round %d: lease after Unlock: %v, want ErrNotHeld", round, l.Err())
		}
		if n := s.Contenders(t); n != 0 {
			t.Fatalf("round %d: %d contenders left by Unlock with a cancelled ctx", round, n)
		}
		if _, err := b.TryLock(ctx); err != nil {
			t.Fatalf("round %d: TryLock after Unlock with a cancelled ctx: %v", round, err)
		}
		if err := b.Unlock(cancelled()); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// A holder cut off the store is told it lost the lock (Done closed, Err
// wrapping ErrLost) before a waiter's Lock returns; its Unlock then
// reports the loss and leaves the new holder alone.
func testLockerLoss(t *testing.T, h LockerHarness) {
	ctx := testCtx(t)
	s := h.New(t, 3, 0)
	if s.Cut == nil {
		t.Fatalf("%s: LockerSet has no Cut", h.Name)
	}
	holder, taker, other := s.Lockers[0], s.Lockers[1], s.Lockers[2]
	held, err := holder.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lostAt := make(chan time.Time, 1)
	go func() {
		<-held.Done()
		lostAt <- time.Now()
	}()
	heal := s.Cut(t, 0)
	healed := false
	defer func() {
		if !healed {
			heal()
		}
	}()
	l, err := taker.Lock(ctx)
	took := time.Now()
	if err != nil {
		t.Fatalf("Lock after the holder was cut off: %v", err)
	}
	select {
	case <-held.Done():
	default:
		t.Fatal("another handle acquired while the cut-off holder's lease was live")
	}
	// The margin as seen by a goroutine woken by Done: at most the real one.
	t.Logf("%s: the loss was signalled %v before the takeover", h.Name, took.Sub(<-lostAt))
	if !errors.Is(held.Err(), baton.ErrLost) {
		t.Fatalf("the cut-off holder's lease: %v, want ErrLost", held.Err())
	}
	if h.Tokens && l.Token() <= held.Token() {
		t.Fatalf("the new holder's token %d is not above the lost holder's %d", l.Token(), held.Token())
	}
	heal()
	healed = true
	if err := holder.Unlock(ctx); !errors.Is(err, baton.ErrLost) {
		t.Fatalf("Unlock after the loss: %v, want ErrLost", err)
	}
	if l.Err() != nil {
		t.Fatalf("the lost holder's Unlock ended the new holder's lease: %v", l.Err())
	}
	if _, err := other.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock after the lost holder's Unlock, while the new holder holds: %v, want ErrLocked", err)
	}
	if err := taker.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// MutexLockers is the LockerHarness of baton.Mutex on h's store, made
// with opts: each handle on a session of its own, its lock's contenders
// are its lock nodes, and Cut is h.Partition. reentrant says whether opts
// make it re-entrant (baton.Reentrant).
func MutexLockers(h Harness, reentrant bool, opts ...baton.MutexOption) LockerHarness {
	label := h.Name + ": baton.Mutex"
	if reentrant {
		label += ", Reentrant"
	}
	return LockerHarness{
		Name:      label,
		Reentrant: reentrant,
		Tokens:    true,
		New: func(t *testing.T, n int, ttl time.Duration) LockerSet {
			name := h.Path(t)
			ss := make([]*baton.Session, n)
			ls := make([]baton.Locker, n)
			for i := range ss {
				ss[i] = h.Open(t, ttl)
				ls[i] = baton.NewMutex(ss[i], name, opts...)
			}
			set := LockerSet{
				Lockers:    ls,
				Contenders: func(t *testing.T) int { return lockNodes(t, h, name) },
			}
			if h.Partition != nil {
				set.Cut = func(t *testing.T, i int) func() { return h.Partition(t, ss[i]) }
			}
			return set
		},
	}
}
