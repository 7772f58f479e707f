package batontest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
)

// kindNodes counts the children of dir of one kind.
func kindNodes(t *testing.T, h Harness, dir, kind string) int {
	n := 0
	for _, k := range children(t, h, dir) {
		if k.Kind == kind {
			n++
		}
	}
	return n
}

// rwNodes counts the readers and writers queued under dir.
func rwNodes(t *testing.T, h Harness, dir string) int {
	return kindNodes(t, h, dir, backend.KindRead) + kindNodes(t, h, dir, backend.KindWrite)
}

// Many readers hold the lock at once; a writer's TryLock fails meanwhile.
func testRWMutexReaders(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const readers = 8
	ss := sessions(t, h, readers+1)
	ms := make([]*baton.RWMutex, readers)
	for i := range readers {
		ms[i] = baton.NewRWMutex(ss[i], name)
		// Each RLock returns while the earlier readers still hold: no
		// reader waits for another.
		if _, err := ms[i].RLock(ctx); err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
	}
	w := baton.NewRWMutex(ss[readers], name)
	if _, err := w.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock with %d readers inside: %v, want ErrLocked", readers, err)
	}
	if _, err := w.TryRLock(ctx); err != nil {
		t.Fatalf("TryRLock with only readers inside: %v", err)
	}
	if err := w.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if err := m.RUnlock(ctx); err != nil {
			t.Fatalf("reader %d RUnlock: %v", i, err)
		}
	}
	if _, err := w.TryLock(ctx); err != nil {
		t.Fatalf("TryLock on a free lock: %v", err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); !errors.Is(err, baton.ErrNotHeld) {
		t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
	}
	if n := rwNodes(t, h, name); n != 0 {
		t.Fatalf("%d nodes left behind", n)
	}
}

// A writer excludes readers and writers: under load, no writer's section
// overlaps any other section, and readers do overlap each other.
func testRWMutexExclusion(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const clients = 6
	cycles := scaled(h, 60)
	ss := sessions(t, h, clients)
	var readers, writers, bad atomic.Int64
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			m := baton.NewRWMutex(ss[i], name)
			for c := range cycles {
				write := (i+c)%3 == 0
				if write {
					l, err := m.Lock(ctx)
					if err != nil {
						t.Errorf("client %d Lock: %v", i, err)
						return
					}
					if writers.Add(1) != 1 || readers.Load() != 0 {
						bad.Add(1)
					}
					Hold(l)
					if readers.Load() != 0 {
						bad.Add(1)
					}
					writers.Add(-1)
					if err := m.Unlock(ctx); err != nil {
						t.Errorf("client %d Unlock: %v", i, err)
						return
					}
					continue
				}
				l, err := m.RLock(ctx)
				if err != nil {
					t.Errorf("client %d RLock: %v", i, err)
					return
				}
				readers.Add(1)
				Hold(l)
				if writers.Load() != 0 {
					bad.Add(1)
				}
				readers.Add(-1)
				if err := m.RUnlock(ctx); err != nil {
					t.Errorf("client %d RUnlock: %v", i, err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	if n := bad.Load(); n != 0 {
		t.Fatalf("%d sections overlapped a writer", n)
	}
	if n := rwNodes(t, h, name); n != 0 {
		t.Fatalf("%d nodes left behind", n)
	}
}

// The seeds' scenario: a writer queued behind a reader goes before readers
// queued after it (no writer starvation), and those readers then enter
// together.
func testRWMutexWriterFirst(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 4)
	r0 := baton.NewRWMutex(ss[0], name)
	if _, err := r0.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	w := baton.NewRWMutex(ss[1], name)
	wgot := make(chan error, 1)
	go func() {
		_, err := w.Lock(ctx)
		note("writer")
		wgot <- err
	}()
	if !await.Within(10*time.Second, func() bool { return rwNodes(t, h, name) == 2 }) {
		t.Fatal("writer never queued")
	}
	rgot := make(chan error, 2)
	rs := []*baton.RWMutex{baton.NewRWMutex(ss[2], name), baton.NewRWMutex(ss[3], name)}
	for _, r := range rs {
		go func() {
			_, err := r.RLock(ctx)
			note("reader")
			rgot <- err
		}()
	}
	if !await.Within(10*time.Second, func() bool { return rwNodes(t, h, name) == 4 }) {
		t.Fatal("later readers never queued")
	}
	if err := r0.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-wgot; err != nil {
		t.Fatalf("writer: %v", err)
	}
	if n := rwNodes(t, h, name); n != 3 {
		t.Fatalf("%d nodes while the writer holds, want 3", n)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for range rs {
		if err := <-rgot; err != nil {
			t.Fatalf("reader: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 3 || order[0] != "writer" {
		t.Fatalf("order %v, want the writer first", order)
	}
	for _, r := range rs {
		if !r.RHeld() {
			t.Fatal("a later reader does not hold after the writer left")
		}
	}
}

// Each waiter watches one node: a writer's release wakes the readers
// directly behind it, a reader's release wakes at most the writer behind.
func testRWMutexHerdFree(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const waiters = 10
	ss := sessions(t, h, waiters+1)
	w0 := baton.NewRWMutex(ss[0], name)
	if _, err := w0.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// Queue: W0 (held), then W1, then readers R2..R10.
	got := make(chan error, waiters)
	ms := make([]*baton.RWMutex, waiters+1)
	for i := 1; i <= waiters; i++ {
		ms[i] = baton.NewRWMutex(ss[i], name)
		go func(i int) {
			var err error
			if i == 1 {
				_, err = ms[i].Lock(ctx)
			} else {
				_, err = ms[i].RLock(ctx)
			}
			got <- err
		}(i)
		want := i + 1
		if !await.Within(10*time.Second, func() bool { return rwNodes(t, h, name) == want }) {
			t.Fatalf("waiter %d never queued", i)
		}
	}
	if h.PendingWatches != nil && !await.Within(10*time.Second, func() bool { return h.PendingWatches(t) >= waiters+1 }) {
		t.Fatalf("only %d of %d watches set", h.PendingWatches(t), waiters+1)
	}
	// A holder's watch on its own node, told of its own release, is not a
	// waiter woken: firesExcept leaves the releaser out.
	before := firesExcept(t, h, ss, ss[0])
	if err := w0.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("writer W1: %v", err)
	}
	// Only W1 watched W0.
	if d := firesExcept(t, h, ss, ss[0]) - before; d > 1 {
		t.Fatalf("W0's release woke %d waiters, want 1", d)
	}
	before = firesExcept(t, h, ss, ss[1])
	if err := ms[1].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= waiters; i++ {
		if err := <-got; err != nil {
			t.Fatalf("reader: %v", err)
		}
	}
	// Every reader watched W1: each is woken once, none twice.
	if d := firesExcept(t, h, ss, ss[1]) - before; d > waiters-1 {
		t.Fatalf("W1's release woke %d, want at most %d", d, waiters-1)
	}
}

// Cancelling a waiting RLock returns ctx's error and leaves nothing.
func testRWMutexCancel(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	w := baton.NewRWMutex(ss[0], name)
	if _, err := w.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() { _, err := baton.NewRWMutex(ss[1], name).RLock(wctx); res <- err }()
	if !await.Within(10*time.Second, func() bool { return rwNodes(t, h, name) == 2 }) {
		t.Fatal("reader never queued")
	}
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled RLock returned %v, want context.Canceled", err)
	}
	if !settles(func() bool { return rwNodes(t, h, name) == 1 }) {
		t.Fatalf("%d nodes after cancel, want only the writer's", rwNodes(t, h, name))
	}
	if _, err := baton.NewRWMutex(ss[1], name).TryRLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryRLock under a writer: %v, want ErrLocked", err)
	}
	if n := rwNodes(t, h, name); n != 1 {
		t.Fatalf("failed TryRLock left %d nodes, want 1", n)
	}
}

// Re-entrancy, downgrade (write then read on one handle) and the refused
// upgrade.
func testRWMutexDowngrade(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	m := baton.NewRWMutex(ss[0], name)
	wl, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := m.Lock(ctx); err != nil || l != wl {
		t.Fatalf("re-entrant Lock: %v", err)
	}
	if err := m.Unlock(ctx); err != nil || !m.Held() {
		t.Fatalf("one of two Unlocks released the lock: %v", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := m.RLock(rctx); err != nil {
		t.Fatalf("RLock while holding the write lock (downgrade): %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !m.RHeld() || m.Held() {
		t.Fatal("after the downgrade the handle should hold only the read lock")
	}
	if _, err := baton.NewRWMutex(ss[1], name).TryRLock(ctx); err != nil {
		t.Fatalf("another reader after the downgrade: %v", err)
	}
	if _, err := m.Lock(ctx); !errors.Is(err, baton.ErrUpgrade) {
		t.Fatalf("Lock while holding the read lock: %v, want ErrUpgrade", err)
	}
	if err := m.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Fault: a reader's session expires while it holds and a writer waits; its
// lease ends as lost and the writer gets the lock. A waiting reader whose
// session expires returns a session error.
func testRWMutexExpiry(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	held, err := baton.NewRWMutex(ss[0], name).RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := baton.NewRWMutex(ss[1], name)
	wgot := make(chan error, 1)
	go func() { _, err := w.Lock(ctx); wgot <- err }()
	if !await.Within(10*time.Second, func() bool { return rwNodes(t, h, name) == 2 }) {
		t.Fatal("writer never queued")
	}
	rgot := make(chan error, 1)
	go func() { _, err := baton.NewRWMutex(ss[2], name).RLock(ctx); rgot <- err }()
	if !await.Within(10*time.Second, func() bool { return rwNodes(t, h, name) == 3 }) {
		t.Fatal("second reader never queued")
	}
	h.Expire(t, ss[2])
	select {
	case err := <-rgot:
		if !baton.IsSessionGone(err) {
			t.Fatalf("waiting reader returned %v, want a session error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("waiting reader still waiting on a dead session")
	}
	h.Expire(t, ss[0])
	select {
	case <-held.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("reader's lease not ended after session expiry")
	}
	if !errors.Is(held.Err(), baton.ErrLost) {
		t.Fatalf("lease error %v, want ErrLost", held.Err())
	}
	if err := <-wgot; err != nil {
		t.Fatalf("writer: %v", err)
	}
	if !w.Held() || rwNodes(t, h, name) != 1 {
		t.Fatal("writer should hold alone")
	}
}

// A Mutex and an RWMutex on one name are one lock: the Mutex is a writer
// (`baton lock` beside `baton lock --shared`). It waits for the readers
// inside, TryLock fails while one holds, and readers wait while it holds.
func testRWMutexWithMutex(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 4)
	rs := []*baton.RWMutex{baton.NewRWMutex(ss[0], name), baton.NewRWMutex(ss[1], name)}
	var inside atomic.Int64
	for i, r := range rs {
		if _, err := r.RLock(ctx); err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
		inside.Add(1)
	}
	mu := baton.NewMutex(ss[2], name)
	if _, err := mu.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("Mutex.TryLock with two readers inside: %v, want ErrLocked", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := mu.Lock(ctx)
		if err == nil && inside.Load() != 0 {
			err = fmt.Errorf("the Mutex acquired with %d readers inside", inside.Load())
		}
		got <- err
	}()
	if !await.Within(10*time.Second, func() bool { return kindNodes(t, h, name, backend.KindLock) == 1 }) {
		t.Fatal("the Mutex never queued")
	}
	for i, r := range rs {
		inside.Add(-1)
		if err := r.RUnlock(ctx); err != nil {
			t.Fatalf("reader %d RUnlock: %v", i, err)
		}
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	r := baton.NewRWMutex(ss[3], name)
	if _, err := r.TryRLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryRLock while the Mutex holds: %v, want ErrLocked", err)
	}
	if err := mu.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.TryRLock(ctx); err != nil {
		t.Fatalf("TryRLock after the Mutex left: %v", err)
	}
	if err := r.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
}
