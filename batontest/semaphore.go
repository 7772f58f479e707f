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

// leaseNodes counts the semaphore's lease nodes.
func leaseNodes(t *testing.T, h Harness, name string) int {
	return kindNodes(t, h, backend.Join(name, "leases"), backend.KindLease)
}

// 20 clients, 3 permits: never more than 3 inside, everyone gets in, and
// nothing is left behind.
func testSemaphoreLimit(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const clients, permits = 20, 3
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	ss := sessions(t, h, clients)
	var inside, most, entries atomic.Int64
	tokens := make(chan int64, clients*rounds)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem := baton.NewSemaphore(ss[i], name, permits)
			for range rounds {
				l, err := sem.Acquire(ctx)
				if err != nil {
					t.Errorf("client %d Acquire: %v", i, err)
					return
				}
				n := inside.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				entries.Add(1)
				tokens <- l.Token()
				Hold(l)
				inside.Add(-1)
				if err := sem.Release(ctx, l); err != nil {
					t.Errorf("client %d Release: %v", i, err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(tokens)
	if m := most.Load(); m > permits {
		t.Fatalf("%d inside at once, want at most %d", m, permits)
	}
	if n := entries.Load(); n != int64(clients*rounds) {
		t.Fatalf("%d entries, want %d", n, clients*rounds)
	}
	seen := map[int64]bool{}
	for tok := range tokens {
		if seen[tok] {
			t.Fatalf("token %d handed out twice", tok)
		}
		seen[tok] = true
	}
	if n := leaseNodes(t, h, name); n != 0 {
		t.Fatalf("%d lease nodes left behind", n)
	}
	if n := kindNodes(t, h, backend.Join(name, "locks"), backend.KindLock); n != 0 {
		t.Fatalf("%d lock nodes left behind", n)
	}
}

// TryAcquire takes a free permit, refuses when all are taken, and a
// Release frees one; releasing a lease twice is ErrNotHeld.
func testSemaphoreTryAcquire(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	a := baton.NewSemaphore(ss[0], name, 2)
	b := baton.NewSemaphore(ss[1], name, 2)
	c := baton.NewSemaphore(ss[2], name, 2)
	la, err := a.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryAcquire(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryAcquire with every permit taken: %v, want ErrLocked", err)
	}
	if n := leaseNodes(t, h, name); n != 2 {
		t.Fatalf("failed TryAcquire left %d leases, want 2", n)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(la.Err(), baton.ErrNotHeld) {
		t.Fatalf("released lease error %v, want ErrNotHeld", la.Err())
	}
	if err := a.Release(ctx, la); !errors.Is(err, baton.ErrNotHeld) {
		t.Fatalf("second Release: %v, want ErrNotHeld", err)
	}
	if _, err := c.TryAcquire(ctx); err != nil {
		t.Fatalf("TryAcquire after a Release: %v", err)
	}
}

// A cancelled Acquire returns ctx's error and leaves no lease or lock node.
func testSemaphoreCancel(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	if _, err := baton.NewSemaphore(ss[0], name, 1).Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() { _, err := baton.NewSemaphore(ss[1], name, 1).Acquire(wctx); res <- err }()
	if !await.Within(10*time.Second, func() bool { return leaseNodes(t, h, name) == 2 }) {
		t.Fatal("waiter never queued")
	}
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire returned %v, want context.Canceled", err)
	}
	if !settles(func() bool { return leaseNodes(t, h, name) == 1 }) {
		t.Fatalf("%d leases after cancel, want 1", leaseNodes(t, h, name))
	}
	if !settles(func() bool { return kindNodes(t, h, backend.Join(name, "locks"), backend.KindLock) == 0 }) {
		t.Fatalf("%d lock nodes after cancel, want 0", kindNodes(t, h, backend.Join(name, "locks"), backend.KindLock))
	}
}

// Fault: with every permit held and a waiter in line, expiring one holder's
// session ends its lease as lost and hands the permit to the waiter. A
// waiter whose own session expires returns a session error.
func testSemaphoreDeadHolder(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const permits = 3
	ss := sessions(t, h, permits+2)
	leases := make([]*baton.Lease, permits)
	for i := range permits {
		l, err := baton.NewSemaphore(ss[i], name, permits).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leases[i] = l
	}
	got := make(chan error, 1)
	go func() { _, err := baton.NewSemaphore(ss[permits], name, permits).Acquire(ctx); got <- err }()
	if !await.Within(10*time.Second, func() bool { return leaseNodes(t, h, name) == permits+1 }) {
		t.Fatal("waiter never queued")
	}
	// A second waiter queues on the mutex behind the first; kill it there.
	lost := make(chan error, 1)
	go func() { _, err := baton.NewSemaphore(ss[permits+1], name, permits).Acquire(ctx); lost <- err }()
	if !await.Within(10*time.Second, func() bool { return kindNodes(t, h, backend.Join(name, "locks"), backend.KindLock) == 2 }) {
		t.Fatal("second waiter never queued")
	}
	h.Expire(t, ss[permits+1])
	select {
	case err := <-lost:
		if !baton.IsSessionGone(err) {
			t.Fatalf("waiter on a dead session returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("waiter still waiting on a dead session")
	}
	h.Expire(t, ss[1])
	select {
	case <-leases[1].Done():
	case <-time.After(20 * time.Second):
		t.Fatal("dead holder's lease not ended")
	}
	if !errors.Is(leases[1].Err(), baton.ErrLost) {
		t.Fatalf("dead holder's lease error %v, want ErrLost", leases[1].Err())
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the dead holder's permit was not handed on")
	}
	if n := leaseNodes(t, h, name); n != permits {
		t.Fatalf("%d leases, want %d", n, permits)
	}
}

// Herd-free: with every permit held and 10 acquirers waiting, a release
// wakes a bounded number of sessions (the Mutex holder watching the leases,
// then the next in the Mutex's line), never all the waiters.
func testSemaphoreHerdFree(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const permits, waiters = 2, 10
	ss := sessions(t, h, permits+waiters)
	sems := make([]*baton.Semaphore, len(ss))
	leases := make([]*baton.Lease, permits)
	for i := range ss {
		sems[i] = baton.NewSemaphore(ss[i], name, permits)
	}
	for i := range permits {
		l, err := sems[i].Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leases[i] = l
	}
	wctx, stop := context.WithCancel(ctx)
	got := make(chan int, waiters)
	for i := permits; i < len(ss); i++ {
		go func(i int) {
			if _, err := sems[i].Acquire(wctx); err != nil {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("waiter %d: %v", i, err)
				}
				got <- -1
				return
			}
			got <- i
		}(i)
	}
	defer func() {
		stop()
		for range waiters - 1 {
			<-got
		}
	}()
	locks := backend.Join(name, "locks")
	if !await.Within(20*time.Second, func() bool { return kindNodes(t, h, locks, backend.KindLock) == waiters }) {
		t.Fatal("waiters never queued")
	}
	// One watches the leases, the others each the lock node before theirs
	// (ZooKeeper's count leaves out the child watch on the leases).
	if h.PendingWatches != nil && !await.Within(20*time.Second, func() bool { return h.PendingWatches(t) >= waiters-1 }) {
		t.Fatalf("only %d of %d watches set", h.PendingWatches(t), waiters-1)
	}
	before := firesExcept(t, h, ss, ss[0])
	if err := sems[0].Release(ctx, leases[0]); err != nil {
		t.Fatal(err)
	}
	if i := <-got; i < 0 {
		t.FailNow()
	}
	// The next in line has the Mutex and watches the leases again.
	if !await.Within(20*time.Second, func() bool {
		return kindNodes(t, h, locks, backend.KindLock) == waiters-1 && leaseNodes(t, h, name) == permits+1
	}) {
		t.Fatal("the next acquirer never took its place")
	}
	if d := firesExcept(t, h, ss, ss[0]) - before; d > 3 {
		t.Fatalf("one release woke %d sessions, want at most 3", d)
	}
}

// A semaphore of no permits is an error, not a panic or a wait forever.
func testSemaphoreNoPermits(t *testing.T, h Harness) {
	ctx := testCtx(t)
	s := h.Open(t, LoadTTL)
	name := h.Path(t)
	// Over MaxPermits, the record of n (a 32-bit int, as Curator's
	// SharedCount) cannot hold n: 2^31 read back as -2^31 and 2^32 as 0,
	// and refused a second client with the same n.
	big := int64(baton.MaxPermits)
	for _, n := range []int64{0, -1, big + 1, 2*big + 2} {
		if _, err := baton.NewSemaphore(s, name, int(n)).Acquire(ctx); !errors.Is(err, baton.ErrInvalidPermits) {
			t.Errorf("%d permits: %v, want ErrInvalidPermits", n, err)
		}
		if _, err := baton.NewSemaphore(s, name, int(n)).TryAcquire(ctx); !errors.Is(err, baton.ErrInvalidPermits) {
			t.Errorf("%d permits, TryAcquire: %v, want ErrInvalidPermits", n, err)
		}
		if _, err := baton.NewPermitSemaphore(s, name, int(n)).Acquire(ctx, time.Minute); !errors.Is(err, baton.ErrInvalidPermits) {
			t.Errorf("%d expiring permits: %v, want ErrInvalidPermits", n, err)
		}
	}
	if kids := children(t, h, name); len(kids) != 0 {
		t.Fatalf("refused semaphores left %+v", kids)
	}
	// MaxPermits itself is recorded and read back: two clients share it.
	ss := sessions(t, h, 2)
	defer removeNodes(t, ss[0], backend.Join(name, "permits"))
	for i, s := range ss {
		m := baton.NewSemaphore(s, name, baton.MaxPermits)
		l, err := m.Acquire(ctx)
		if err != nil {
			t.Fatalf("client %d, %d permits: %v", i, baton.MaxPermits, err)
		}
		defer func() {
			if err := m.Release(ctx, l); err != nil {
				t.Errorf("Release: %v", err)
			}
		}()
	}
}

// A client asking for another number of permits than the holders' is
// refused (ErrPermitsMismatch) and leaves nothing behind; once the
// semaphore is empty, the number can change.
func testSemaphorePermitsMismatch(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	one := baton.NewSemaphore(ss[0], name, 1)
	l, err := one.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := baton.NewSemaphore(ss[1], name, 5).Acquire(ctx); !errors.Is(err, baton.ErrPermitsMismatch) {
		t.Fatalf("5 permits while a 1-permit holder is inside: %v, want ErrPermitsMismatch", err)
	}
	if _, err := baton.NewSemaphore(ss[1], name, 5).TryAcquire(ctx); !errors.Is(err, baton.ErrPermitsMismatch) && !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryAcquire with 5 permits: %v, want ErrPermitsMismatch or ErrLocked", err)
	}
	if n := leaseNodes(t, h, name); n != 1 {
		t.Fatalf("%d lease nodes after the refusals, want 1", n)
	}
	if n := kindNodes(t, h, backend.Join(name, "locks"), backend.KindLock); n != 0 {
		t.Fatalf("%d nodes left in the acquirers' line, want 0", n)
	}
	if err := one.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	// Empty: 5 permits now, and the record follows.
	five := baton.NewSemaphore(ss[1], name, 5)
	l5, err := five.Acquire(ctx)
	if err != nil {
		t.Fatalf("5 permits on the empty semaphore: %v", err)
	}
	if _, err := baton.NewSemaphore(ss[2], name, 1).Acquire(ctx); !errors.Is(err, baton.ErrPermitsMismatch) {
		t.Fatalf("1 permit while a 5-permit holder is inside: %v, want ErrPermitsMismatch", err)
	}
	other := baton.NewSemaphore(ss[2], name, 5)
	l5b, err := other.Acquire(ctx)
	if err != nil {
		t.Fatalf("a second holder with the same 5 permits: %v", err)
	}
	if err := five.Release(ctx, l5); err != nil {
		t.Fatal(err)
	}
	if err := other.Release(ctx, l5b); err != nil {
		t.Fatal(err)
	}
}
