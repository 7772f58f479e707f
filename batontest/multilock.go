package batontest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
)

// multiNames returns n lock names under one fresh path.
func multiNames(t *testing.T, h Harness, n int) []string {
	base := h.Path(t)
	out := make([]string, n)
	for i := range out {
		out[i] = backend.Join(base, string(rune('a'+i)))
	}
	return out
}

// Multi-locks over overlapping sets, given in different orders and mixing
// kinds (Mutex, RWMutex's write side, a plain Mutex contending on one
// part): every set contains b, so no two critical sections may overlap,
// and every client finishes its cycles (no deadlock) within a bound.
func testMultiLockExclusion(t *testing.T, h Harness) {
	ctx, cancel := context.WithTimeout(testCtx(t), 60*time.Second)
	defer cancel()
	n := multiNames(t, h, 4)
	a, b, c, d := n[0], n[1], n[2], n[3]
	cycles := 30
	if testing.Short() {
		cycles = 10
	}
	ss := sessions(t, h, 5)
	type locker interface {
		Lock(context.Context) (*baton.Lease, error)
		Unlock(context.Context) error
	}
	ls := []locker{
		baton.NewMultiLock(baton.NewMutex(ss[0], a), baton.NewMutex(ss[0], b), baton.NewMutex(ss[0], c)),
		baton.NewMultiLock(baton.NewMutex(ss[1], c), baton.NewMutex(ss[1], b), baton.NewMutex(ss[1], a)),
		baton.NewMultiLock(baton.NewMutex(ss[2], d), baton.NewRWMutex(ss[2], c), baton.NewMutex(ss[2], b)),
		baton.NewMultiLock(baton.NewMutex(ss[3], b), baton.NewMutex(ss[3], d)),
		baton.NewMutex(ss[4], b),
	}
	parts := []int{3, 3, 3, 2, 1}
	var chk Checker
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range cycles {
				lease, err := l.Lock(ctx)
				if err != nil {
					t.Errorf("client %d lock (deadlock?): %v", i, err)
					return
				}
				if got := len(lease.Tokens()); got != parts[i] {
					t.Errorf("client %d: %d tokens, want %d", i, got, parts[i])
				}
				sp := chk.Enter(i, lease.Token())
				Hold(lease)
				chk.Leave(sp)
				if err := lease.Err(); err != nil {
					t.Errorf("client %d: lease ended while held: %v", i, err)
				}
				if err := l.Unlock(ctx); err != nil {
					t.Errorf("client %d unlock: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := chk.Verify(false); err != nil {
		t.Fatal(err)
	}
	for _, name := range n {
		if k := lockNodes(t, h, name); k != 0 {
			t.Fatalf("%s: %d nodes left", name, k)
		}
	}
}

// Two multi-locks over the same locks given in opposite orders, each
// cycling as fast as it can: with one global order neither ever waits for
// the other in a cycle, so both finish within the bound.
func testMultiLockOppositeOrders(t *testing.T, h Harness) {
	ctx, cancel := context.WithTimeout(testCtx(t), 30*time.Second)
	defer cancel()
	n := multiNames(t, h, 3)
	ss := sessions(t, h, 2)
	ms := []*baton.MultiLock{
		baton.NewMultiLock(baton.NewMutex(ss[0], n[0]), baton.NewMutex(ss[0], n[1]), baton.NewMutex(ss[0], n[2])),
		baton.NewMultiLock(baton.NewMutex(ss[1], n[2]), baton.NewMutex(ss[1], n[1]), baton.NewMutex(ss[1], n[0])),
	}
	// First the crossing that deadlocks locks taken in the order given:
	// each part, once taken, lingers until some other part has been taken
	// too (300 ms at most), so that each multi-lock would hold its first
	// part given while waiting for the other's.
	var taken atomic.Int32
	linger := func(m *baton.Mutex) baton.Locker { return lingering{m, &taken} }
	crossed := []*baton.MultiLock{
		baton.NewMultiLock(linger(baton.NewMutex(ss[0], n[0])), linger(baton.NewMutex(ss[0], n[1]))),
		baton.NewMultiLock(linger(baton.NewMutex(ss[1], n[1])), linger(baton.NewMutex(ss[1], n[0]))),
	}
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	var wg sync.WaitGroup
	for i, m := range crossed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.Lock(cctx); err != nil {
				t.Errorf("crossed multi-lock %d (deadlock?): %v", i, err)
				return
			}
			if err := m.Unlock(ctx); err != nil {
				t.Errorf("crossed multi-lock %d unlock: %v", i, err)
			}
		}()
	}
	wg.Wait()
	ccancel()
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, err := m.Lock(ctx); err != nil {
					t.Errorf("multi-lock %d (deadlock?): %v", i, err)
					return
				}
				if err := m.Unlock(ctx); err != nil {
					t.Errorf("multi-lock %d unlock: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A multi-lock that cannot get one part (held by another, at each position
// in turn) gives back the parts it took when its ctx ends, by deadline or
// by cancel while it waits; once the part is free it takes all three, and
// Unlock gives back all three.
func testMultiLockPartialFailure(t *testing.T, h Harness) {
	ctx := testCtx(t)
	n := multiNames(t, h, 3)
	ss := sessions(t, h, 2)
	counts := func() []int {
		out := make([]int, len(n))
		for i, name := range n {
			out[i] = lockNodes(t, h, name)
		}
		return out
	}
	only := func(k int) func() bool {
		return func() bool {
			for i, c := range counts() {
				if (i == k && c != 1) || (i != k && c != 0) {
					return false
				}
			}
			return true
		}
	}
	m := baton.NewMultiLock(baton.NewMutex(ss[0], n[2]), baton.NewMutex(ss[0], n[0]), baton.NewMutex(ss[0], n[1]))
	for k := range n {
		other := baton.NewMutex(ss[1], n[k])
		if _, err := other.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		dctx, dcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := m.Lock(dctx)
		dcancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("part %d held: Lock returned %v, want DeadlineExceeded", k, err)
		}
		if !settles(only(k)) {
			t.Fatalf("part %d held: nodes %v after the deadline, want only the holder's", k, counts())
		}
		if m.Held() {
			t.Fatalf("part %d held: the multi-lock says it holds", k)
		}
		// Cancelled while waiting on part k, with the parts before it taken.
		cctx, ccancel := context.WithCancel(ctx)
		res := make(chan error, 1)
		go func() { _, err := m.Lock(cctx); res <- err }()
		if !await.Within(10*time.Second, func() bool { return counts()[k] == 2 }) {
			ccancel()
			t.Fatalf("part %d held: the multi-lock never queued on it: %v", k, counts())
		}
		ccancel()
		if err := <-res; !errors.Is(err, context.Canceled) {
			t.Fatalf("part %d held: cancelled Lock returned %v", k, err)
		}
		if !settles(only(k)) {
			t.Fatalf("part %d held: nodes %v after cancel, want only the holder's", k, counts())
		}
		if err := other.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Parts()) != 3 || len(l.Tokens()) != 3 || l.Token() != l.Tokens()[0] {
		t.Fatalf("lease covers %d parts, tokens %v, token %d", len(l.Parts()), l.Tokens(), l.Token())
	}
	if _, err := m.Lock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("second Lock while held: %v, want ErrLocked", err)
	}
	if c := counts(); c[0] != 1 || c[1] != 1 || c[2] != 1 {
		t.Fatalf("nodes %v while held, want one each", c)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done open after Unlock")
	}
	if !errors.Is(l.Err(), baton.ErrNotHeld) {
		t.Fatalf("lease error after Unlock: %v", l.Err())
	}
	if c := counts(); c[0]+c[1]+c[2] != 0 {
		t.Fatalf("nodes %v after Unlock", c)
	}
	if err := m.Unlock(ctx); !errors.Is(err, baton.ErrNotHeld) {
		t.Fatalf("Unlock without a hold: %v", err)
	}
}

// A multi-lock whose parts are on two sessions: expiring one ends the
// whole lease (Done, ErrLost), and Unlock gives back the other part.
func testMultiLockPartLost(t *testing.T, h Harness) {
	ctx := testCtx(t)
	n := multiNames(t, h, 2)
	ss := sessions(t, h, 2)
	m := baton.NewMultiLock(baton.NewMutex(ss[0], n[0]), baton.NewMutex(ss[1], n[1]))
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.Expire(t, ss[1])
	select {
	case <-l.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("lease not ended after a part's session expired")
	}
	if !errors.Is(l.Err(), baton.ErrLost) {
		t.Fatalf("lease error %v, want ErrLost", l.Err())
	}
	if m.Held() {
		t.Fatal("Held after a part was lost")
	}
	if err := m.Unlock(ctx); !errors.Is(err, baton.ErrLost) {
		t.Fatalf("Unlock after a loss: %v, want ErrLost", err)
	}
	if !settles(func() bool { return lockNodes(t, h, n[0]) == 0 }) {
		t.Fatalf("the part still live was not given back")
	}
}

// A revocation request to any part reaches the MultiLock's lease: its
// RevokeRequested closes while it still holds every part (nobody else
// acquires), and after Unlock the part is free.
func testMultiLockRevokeRequested(t *testing.T, h Harness) {
	ctx := testCtx(t)
	n := multiNames(t, h, 2)
	ss := sessions(t, h, 3)
	m := baton.NewMultiLock(baton.NewMutex(ss[0], n[0], baton.Revocable()), baton.NewMutex(ss[1], n[1], baton.Revocable()))
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.RevokeRequested():
		t.Fatal("a multi-lock nobody asked to let go is revoked")
	default:
	}
	if _, err := baton.Revoke(ctx, ss[2], n[1]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.RevokeRequested():
	case <-time.After(10 * time.Second):
		t.Fatal("the multi-lock's holder was not told that a part was asked to let go")
	}
	if l.Err() != nil || !m.Held() {
		t.Fatalf("a revocation request ended the multi-lock's lease: %v", l.Err())
	}
	other := baton.NewMutex(ss[2], n[1])
	if _, err := other.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock of the revoked part while the multi-lock holds: %v, want ErrLocked", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryLock(ctx); err != nil {
		t.Fatalf("TryLock of the revoked part after Unlock: %v", err)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A part twice, a part without a name, or no part: ErrInvalidName.
func testMultiLockInvalid(t *testing.T, h Harness) {
	ctx := testCtx(t)
	s := sessions(t, h, 1)[0]
	n := multiNames(t, h, 1)[0]
	for name, m := range map[string]*baton.MultiLock{
		"twice":   baton.NewMultiLock(baton.NewMutex(s, n), baton.NewMutex(s, n)),
		"no name": baton.NewMultiLock(unnamed{baton.NewMutex(s, n)}),
		"empty":   baton.NewMultiLock(),
	} {
		if _, err := m.Lock(ctx); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("%s: %v, want ErrInvalidName", name, err)
		}
	}
	// The same name on two stores is two locks.
	m := baton.NewMultiLock(baton.OnStore("one", "", baton.NewMutex(s, n)), baton.OnStore("two", n, unnamed{baton.NewMutex(s, n+"x")}))
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

type unnamed struct{ m *baton.Mutex }

func (u unnamed) Lock(ctx context.Context) (*baton.Lease, error)    { return u.m.Lock(ctx) }
func (u unnamed) TryLock(ctx context.Context) (*baton.Lease, error) { return u.m.TryLock(ctx) }
func (u unnamed) Unlock(ctx context.Context) error                  { return u.m.Unlock(ctx) }

// lingering is a Mutex that, once taken, waits until a part has been taken
// elsewhere too (300 ms at most) before Lock returns.
type lingering struct {
	*baton.Mutex
	taken *atomic.Int32
}

func (l lingering) Lock(ctx context.Context) (*baton.Lease, error) {
	lease, err := l.Mutex.Lock(ctx)
	if err == nil {
		n := l.taken.Add(1)
		await.Within(300*time.Millisecond, func() bool { return l.taken.Load() > n })
	}
	return lease, err
}

// TryLock is all or nothing without waiting: with any part held by
// another, it fails with ErrLocked at once and leaves no node of its own
// on any part (those before the held one were taken and given back); with
// every part free it takes them all; a part without TryLock is refused
// before anything is taken.
func testMultiLockTryLock(t *testing.T, h Harness) {
	ctx := testCtx(t)
	n := multiNames(t, h, 3)
	ss := sessions(t, h, 2)
	m := baton.NewMultiLock(baton.NewMutex(ss[0], n[2]), baton.NewMutex(ss[0], n[0]), baton.NewMutex(ss[0], n[1]))
	for k := range n {
		other := baton.NewMutex(ss[1], n[k])
		if _, err := other.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := m.TryLock(ctx)
		if !errors.Is(err, baton.ErrLocked) {
			t.Fatalf("part %d held: TryLock returned %v, want ErrLocked", k, err)
		}
		if m.Held() {
			t.Fatalf("part %d held: the multi-lock says it holds", k)
		}
		for i, name := range n {
			want := 0
			if i == k {
				want = 1
			}
			if c := lockNodes(t, h, name); c != want {
				t.Fatalf("part %d held: %d nodes on part %d after TryLock, want %d", k, c, i, want)
			}
		}
		if err := other.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l, err := m.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with every part free: %v", err)
	}
	if len(l.Tokens()) != 3 {
		t.Fatalf("lease tokens %v, want 3", l.Tokens())
	}
	if _, err := baton.NewMutex(ss[1], n[1]).TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("a part while the multi-lock holds: %v, want ErrLocked", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, name := range n {
		if c := lockNodes(t, h, name); c != 0 {
			t.Fatalf("%d nodes on part %d at the end", c, i)
		}
	}
}
