package batontest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
)

// lockNodes counts the lock contenders under dir.
func lockNodes(t *testing.T, h Harness, dir string) int {
	n := 0
	for _, k := range children(t, h, dir) {
		if k.Kind == backend.KindLock {
			n++
		}
	}
	return n
}

// The seeds' scenario: three clients queue on one lock and get it in the
// order they queued; closing the holder's session hands it to the next.
func testMutexSeeds(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	first, err := baton.NewMutex(ss[0], name).Lock(ctx)
	if err != nil {
		t.Fatalf("first lock: %v", err)
	}
	order := make(chan int, 3)
	leases := make([]*baton.Lease, 3)
	var wg sync.WaitGroup
	for i := 1; i < 3; i++ {
		// Queue client i only after client i-1 has its node, so the
		// creation order is known.
		want := i + 1
		if !await.Within(10*time.Second, func() bool { return lockNodes(t, h, name) == want-1 }) {
			t.Fatalf("client %d never queued", i-1)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l, err := baton.NewMutex(ss[i], name).Lock(ctx)
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			leases[i] = l
			order <- i
			<-ss[i].Done()
		}(i)
	}
	if !await.Within(10*time.Second, func() bool { return lockNodes(t, h, name) == 3 }) {
		t.Fatal("waiters never queued")
	}
	if err := ss[0].Close(ctx); err != nil {
		t.Fatalf("close holder: %v", err)
	}
	select {
	case <-first.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("holder's lease not ended by Close")
	}
	if got := <-order; got != 1 {
		t.Fatalf("after the holder left, client %d got the lock, want 1", got)
	}
	if err := ss[1].Close(ctx); err != nil {
		t.Fatalf("close second: %v", err)
	}
	if got := <-order; got != 2 {
		t.Fatalf("third acquisition by client %d, want 2", got)
	}
	if leases[2].Token() <= leases[1].Token() || leases[1].Token() <= first.Token() {
		t.Fatalf("tokens not increasing: %d %d %d", first.Token(), leases[1].Token(), leases[2].Token())
	}
	_ = ss[2].Close(ctx)
	wg.Wait()
}

// Mutual exclusion under load: 8 sessions × cycles; no two critical
// sections overlap and fencing tokens strictly increase.
func testMutexExclusion(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const clients = 8
	cycles := 200
	if testing.Short() {
		cycles = 50
	}
	ss := sessions(t, h, clients)
	contend(t, h, ctx, name, clients, cycles, func(i int) *baton.Mutex { return baton.NewMutex(ss[i], name) })
}

// contend runs clients goroutines, each locking mutexOf(i) (called once
// per goroutine) cycles times around a critical section of real width,
// then checks that no two sections overlapped, that fencing tokens rose,
// that every cycle ran and that no lock node is left under name.
func contend(t *testing.T, h Harness, ctx context.Context, name string, clients, cycles int, mutexOf func(i int) *baton.Mutex) {
	t.Helper()
	var chk Checker
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			m := mutexOf(i)
			for range cycles {
				l, err := m.Lock(ctx)
				if err != nil {
					t.Errorf("client %d lock: %v", i, err)
					return
				}
				sp := chk.Enter(i, l.Token())
				Hold(l)
				chk.Leave(sp)
				if err := m.Unlock(ctx); err != nil {
					t.Errorf("client %d unlock: %v", i, err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	if err := chk.Verify(true); err != nil {
		t.Fatal(err)
	}
	if got := len(chk.Spans()); got != clients*cycles {
		t.Fatalf("%d critical sections, want %d", got, clients*cycles)
	}
	if n := lockNodes(t, h, name); n != 0 {
		t.Fatalf("%d lock nodes left behind", n)
	}
}

// Herd-free: with 50 waiters queued, each release wakes exactly one.
func testMutexHerd(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const waiters = 50
	ss := sessions(t, h, waiters+1)
	m0 := baton.NewMutex(ss[0], name)
	if _, err := m0.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan int, waiters)
	ms := make([]*baton.Mutex, waiters+1)
	ms[0] = m0
	for i := 1; i <= waiters; i++ {
		ms[i] = baton.NewMutex(ss[i], name)
		go func(i int) {
			if _, err := ms[i].Lock(ctx); err != nil {
				t.Errorf("waiter %d: %v", i, err)
				got <- -1
				return
			}
			got <- i
		}(i)
	}
	if !await.Within(20*time.Second, func() bool { return lockNodes(t, h, name) == waiters+1 }) {
		t.Fatal("waiters never queued")
	}
	// Every waiter watches its predecessor, and the holder its own node;
	// where the store can say how many watches are pending, wait until all
	// are set so that every release must wake exactly one.
	exact := h.PendingWatches != nil
	if exact && !await.Within(20*time.Second, func() bool { return h.PendingWatches(t) >= waiters+1 }) {
		t.Fatalf("only %d of %d watches set", h.PendingWatches(t), waiters+1)
	}
	// Setting a watch sends no notification, so counting from here counts
	// only the wake-ups the releases cause. The releaser's own watch on
	// its node is told too; it is not a waiter, so it is not counted.
	holder := 0
	for i := 0; i < waiters; i++ {
		before := firesExcept(t, h, ss, ss[holder])
		if err := ms[holder].Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		next := <-got
		if next < 0 {
			t.FailNow()
		}
		// The next holder is running: every notification this release
		// caused has been delivered.
		d := firesExcept(t, h, ss, ss[holder]) - before
		if d > 1 {
			t.Fatalf("release %d woke %d waiters, want 1", i, d)
		} else if exact && d != 1 {
			t.Fatalf("release %d sent %d notifications, want exactly 1", i, d)
		}
		holder = next
	}
	if err := ms[holder].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Cancelling a waiting Lock returns ctx's error and removes its node.
func testMutexCancel(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	holder := baton.NewMutex(ss[0], name)
	if _, err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() {
		_, err := baton.NewMutex(ss[1], name).Lock(wctx)
		res <- err
	}()
	if !await.Within(10*time.Second, func() bool { return lockNodes(t, h, name) == 2 }) {
		t.Fatal("waiter never queued")
	}
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock returned %v, want context.Canceled", err)
	}
	if !settles(func() bool { return lockNodes(t, h, name) == 1 }) {
		t.Fatalf("%d nodes after cancel, want only the holder's", lockNodes(t, h, name))
	}
	// A deadline is reported as such.
	dctx, dcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer dcancel()
	if _, err := baton.NewMutex(ss[1], name).Lock(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed-out Lock returned %v", err)
	}
	if !settles(func() bool { return lockNodes(t, h, name) == 1 }) {
		t.Fatalf("%d nodes after timeout, want 1", lockNodes(t, h, name))
	}
}

// A create whose reply is lost leaves exactly one node, and the lock still
// works: no orphan, no deadlock.
func testMutexCreateReplyLost(t *testing.T, h Harness) {
	if h.DropCreateReply == nil {
		t.Fatalf("%s: harness has no DropCreateReply", h.Name)
	}
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	h.DropCreateReply(t, ss[0])
	m := baton.NewMutex(ss[0], name)
	if _, err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock after a lost create reply: %v", err)
	}
	if n := lockNodes(t, h, name); n != 1 {
		t.Fatalf("%d lock nodes after a lost create reply, want 1", n)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := lockNodes(t, h, name); n != 0 {
		t.Fatalf("orphan: %d lock nodes after Unlock", n)
	}
	// The lock is free for someone else at once.
	if _, err := baton.NewMutex(ss[1], name).TryLock(ctx); err != nil {
		t.Fatalf("lock not free after Unlock: %v", err)
	}
}

// A holder cut off the store learns it lost the lock before any other
// session's Lock returns.
func testMutexLostFirst(t *testing.T, h Harness) {
	if h.Partition == nil {
		t.Fatalf("%s: harness has no Partition", h.Name)
	}
	ctx := testCtx(t)
	name := h.Path(t)
	holderS := h.Open(t, 0)
	other := h.Open(t, LoadTTL)
	held, err := baton.NewMutex(holderS, name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	heal := h.Partition(t, holderS)
	defer heal()
	l, err := baton.NewMutex(other, name).Lock(ctx)
	if err != nil {
		t.Fatalf("other Lock after the holder was cut off: %v", err)
	}
	select {
	case <-held.Done():
	default:
		t.Fatal("another session acquired while the cut-off holder still believed it held the lock")
	}
	if !errors.Is(held.Err(), baton.ErrLost) {
		t.Fatalf("holder's lease error %v, want ErrLost", held.Err())
	}
	if l.Token() <= held.Token() {
		t.Fatalf("new token %d not above the lost holder's %d", l.Token(), held.Token())
	}
}

// The server expires the holder's session: its lease ends as lost, another
// waiter gets the lock, and the old holder's Unlock reports the loss
// without touching the new holder's node.
func testMutexExpiry(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	old := baton.NewMutex(ss[0], name)
	held, err := old.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	m := baton.NewMutex(ss[1], name)
	go func() { _, err := m.Lock(ctx); got <- err }()
	if !await.Within(10*time.Second, func() bool { return lockNodes(t, h, name) == 2 }) {
		t.Fatal("waiter never queued")
	}
	h.Expire(t, ss[0])
	select {
	case <-held.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("lease not ended after session expiry")
	}
	if !errors.Is(held.Err(), baton.ErrLost) {
		t.Fatalf("lease error %v, want ErrLost", held.Err())
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if err := old.Unlock(ctx); !errors.Is(err, baton.ErrLost) {
		t.Fatalf("Unlock after loss: %v, want ErrLost", err)
	}
	if !m.Held() || lockNodes(t, h, name) != 1 {
		t.Fatal("the old holder's Unlock disturbed the new holder")
	}
}

// A waiter whose session ends returns promptly with a session error.
func testMutexWaiterLost(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	if _, err := baton.NewMutex(ss[0], name).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() { _, err := baton.NewMutex(ss[1], name).Lock(ctx); res <- err }()
	if !await.Within(10*time.Second, func() bool { return lockNodes(t, h, name) == 2 }) {
		t.Fatal("waiter never queued")
	}
	h.Expire(t, ss[1])
	select {
	case err := <-res:
		if !baton.IsSessionGone(err) {
			t.Fatalf("waiter returned %v, want a session error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("waiter still waiting on a dead session")
	}
}

func testMutexInvalidName(t *testing.T, h Harness) {
	ctx := testCtx(t)
	s := h.Open(t, LoadTTL)
	// baton.CleanName's rule, the same on every store: each recipe
	// refuses these before any I/O.
	for _, name := range []string{"", "/", "bad\x00name", "a/../b", "/a/./b", "/a//b", "/a/", "\U0001f600", "/x/\xff", "x:token"} {
		_, err := baton.NewMutex(s, name).TryLock(ctx)
		if !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("mutex %q: %v, want ErrInvalidName", name, err)
		}
		if _, err := baton.NewSemaphore(s, name, 1).TryAcquire(ctx); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("semaphore %q: %v, want ErrInvalidName", name, err)
		}
		if err := baton.NewBarrier(s, name).Set(ctx); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("barrier %q: %v, want ErrInvalidName", name, err)
		}
		if err := baton.NewQueue(s, name).Put(ctx, nil); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("queue %q: %v, want ErrInvalidName", name, err)
		}
		if _, _, err := baton.NewElection(s, name).Leader(ctx); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("election %q: %v, want ErrInvalidName", name, err)
		}
		if _, err := baton.NewSharedCount(s, name, 0).Get(ctx); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("shared count %q: %v, want ErrInvalidName", name, err)
		}
		if _, err := baton.NewAtomicLong(s, name).Get(ctx); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("atomic long %q: %v, want ErrInvalidName", name, err)
		}
	}
}

// Names as users write them (baton.CleanName's rule): "x" and "/x", and a
// nested "a/b" both ways. On a store of absolute paths (its Conn is a
// baton.AbsolutePaths: ZooKeeper) the two spellings are one lock, named
// with the "/"; on the others each is a lock of its own, named as
// written, and neither holder keeps the other out. A barrier written
// without a "/" is that node.
func testMutexNameForms(t *testing.T, h Harness) {
	ctx := testCtx(t)
	ss := sessions(t, h, 2)
	a, abs := ss[0].Conn().(backend.AbsolutePaths)
	abs = abs && a.AbsolutePaths()
	base := strings.TrimPrefix(h.Path(t), "/")
	for _, name := range []string{base, base + "/a/b"} {
		with, without := baton.NewMutex(ss[0], "/"+name), baton.NewMutex(ss[1], name)
		want := name
		if abs {
			want = "/" + name
		}
		if with.Name() != "/"+name || without.Name() != want {
			t.Fatalf("Name() = %q and %q, want %q and %q", with.Name(), without.Name(), "/"+name, want)
		}
		if _, err := with.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := without.TryLock(ctx)
		switch {
		case abs && !errors.Is(err, baton.ErrLocked):
			t.Fatalf("TryLock on %q while /%s is held: %v, want ErrLocked (one znode)", name, name, err)
		case !abs && err != nil:
			t.Fatalf("TryLock on %q while /%s is held: %v, want a lock of its own", name, name, err)
		case !abs:
			if err := without.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := with.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := without.TryLock(ctx); err != nil {
			t.Fatalf("TryLock on %q once free: %v", name, err)
		}
		if err := without.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	bar := base + "-barrier"
	b := baton.NewBarrier(ss[0], bar)
	if err := b.Set(ctx); err != nil {
		t.Fatalf("Set barrier %q: %v", bar, err)
	}
	if _, _, err := ss[1].Conn().Get(ctx, "/"+bar); (err == nil) != abs {
		t.Fatalf("barrier %q set: Get /%s: %v", bar, bar, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- baton.NewBarrier(ss[1], bar).Wait(ctx) }()
	if err := b.Remove(ctx); err != nil {
		t.Fatalf("Remove barrier %q: %v", bar, err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("Wait barrier %q: %v", bar, err)
	}
}

func testMutexTryLock(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	a, b := baton.NewMutex(ss[0], name), baton.NewMutex(ss[1], name)
	if _, err := a.TryLock(ctx); err != nil {
		t.Fatalf("TryLock on a free lock: %v", err)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock on a held lock: %v, want ErrLocked", err)
	}
	if n := lockNodes(t, h, name); n != 1 {
		t.Fatalf("failed TryLock left %d nodes, want 1", n)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after release: %v", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); !errors.Is(err, baton.ErrNotHeld) {
		t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
	}
}

func testMutexReentrant(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	s := h.Open(t, LoadTTL)
	m := baton.NewMutex(s, name, baton.Reentrant())
	l1, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := m.Lock(ctx)
	if err != nil || l2 != l1 {
		t.Fatalf("re-entrant Lock: %v, same lease %v", err, l1 == l2)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !m.Held() || l1.Err() != nil {
		t.Fatal("lock released after one of two Unlocks")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Held() || !errors.Is(l1.Err(), baton.ErrNotHeld) {
		t.Fatalf("after the last Unlock: held %v, lease err %v", m.Held(), l1.Err())
	}
	if n := lockNodes(t, h, name); n != 0 {
		t.Fatalf("%d nodes left after release", n)
	}
}
