package batontest

import (
	"context"
	"errors"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// releaseRounds is how many times each release path is taken with a
// cancelled ctx: the bug it pins (a release that gave up at random on a
// done ctx) showed in about half the runs of the worst path.
const releaseRounds = 200

// cancelled is a ctx that is already done.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// releaser is one handle of a lock-like recipe, driven by the release
// tests: take acquires (without waiting for another holder), release gives
// it back.
type releaser struct {
	take    func(ctx context.Context) (*baton.Lease, error)
	release func(ctx context.Context) error
}

// testReleaseCancelled takes the lock on one of two sessions, releases it
// with a cancelled ctx, and checks that the release released: the other
// session takes the lock at once, and a retried release is a no-op
// (ErrNotHeld) that leaves the new holder's lease live. The two sessions
// then swap roles, releaseRounds times.
func testReleaseCancelled(t *testing.T, h Harness, mk func(s *baton.Session, name string) releaser) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	hs := [2]releaser{mk(ss[0], name), mk(ss[1], name)}
	l, err := hs[0].take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range releaseRounds {
		holder, next := hs[i%2], hs[(i+1)%2]
		if err := holder.release(cancelled()); err != nil {
			t.Fatalf("round %d: release with a cancelled ctx: %v", i, err)
		}
		if l.Err() == nil {
			t.Fatalf("round %d: the lease is still live after its release", i)
		}
		nl, err := next.take(ctx)
		if err != nil {
			t.Fatalf("round %d: the next contender cannot acquire after a release with a cancelled ctx: %v", i, err)
		}
		if err := holder.release(cancelled()); !errors.Is(err, baton.ErrNotHeld) {
			t.Fatalf("round %d: retried release: %v, want ErrNotHeld", i, err)
		}
		if nl.Err() != nil || nl.Token() <= l.Token() {
			t.Fatalf("round %d: new holder's lease err %v token %d after %d", i, nl.Err(), nl.Token(), l.Token())
		}
		l = nl
	}
	if err := hs[releaseRounds%2].release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(children(t, h, name)); n != 0 && !isSemaphoreDir(t, h, name) {
		t.Fatalf("%d nodes left behind", n)
	}
}

// isSemaphoreDir reports whether name holds a Semaphore's two directories
// and nothing in them.
func isSemaphoreDir(t *testing.T, h Harness, name string) bool {
	return len(children(t, h, backend.Join(name, "leases"))) == 0 && len(children(t, h, backend.Join(name, "locks"))) == 0
}

func testMutexUnlockCancelled(t *testing.T, h Harness) {
	testReleaseCancelled(t, h, func(s *baton.Session, name string) releaser {
		m := baton.NewMutex(s, name)
		return releaser{take: m.TryLock, release: m.Unlock}
	})
}

func testRWMutexUnlockCancelled(t *testing.T, h Harness) {
	testReleaseCancelled(t, h, func(s *baton.Session, name string) releaser {
		m := baton.NewRWMutex(s, name)
		return releaser{take: m.TryLock, release: m.Unlock}
	})
}

// A reader's release with a cancelled ctx lets a writer in.
func testRWMutexRUnlockCancelled(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	r, w := baton.NewRWMutex(ss[0], name), baton.NewRWMutex(ss[1], name)
	for i := range releaseRounds {
		l, err := r.TryRLock(ctx)
		if err != nil {
			t.Fatalf("round %d: read lock: %v", i, err)
		}
		if err := r.RUnlock(cancelled()); err != nil {
			t.Fatalf("round %d: RUnlock with a cancelled ctx: %v", i, err)
		}
		if l.Err() == nil {
			t.Fatalf("round %d: the read lease is still live after RUnlock", i)
		}
		wl, err := w.TryLock(ctx)
		if err != nil {
			t.Fatalf("round %d: the writer cannot acquire after RUnlock with a cancelled ctx: %v", i, err)
		}
		if err := r.RUnlock(cancelled()); !errors.Is(err, baton.ErrNotHeld) {
			t.Fatalf("round %d: retried RUnlock: %v, want ErrNotHeld", i, err)
		}
		if wl.Err() != nil {
			t.Fatalf("round %d: writer's lease ended: %v", i, wl.Err())
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func testSemaphoreReleaseCancelled(t *testing.T, h Harness) {
	testReleaseCancelled(t, h, func(s *baton.Session, name string) releaser {
		m := baton.NewSemaphore(s, name, 1)
		var held *baton.Lease
		return releaser{
			take: func(ctx context.Context) (*baton.Lease, error) {
				l, err := m.TryAcquire(ctx)
				if err == nil {
					held = l
				}
				return l, err
			},
			release: func(ctx context.Context) error { return m.Release(ctx, held) },
		}
	})
}

func testElectionResignCancelled(t *testing.T, h Harness) {
	testReleaseCancelled(t, h, func(s *baton.Session, name string) releaser {
		e := baton.NewElection(s, name)
		return releaser{
			take: func(ctx context.Context) (*baton.Lease, error) {
				if err := e.Campaign(ctx, []byte(s.ID())); err != nil {
					return nil, err
				}
				return e.Lease(), nil
			},
			release: e.Resign,
		}
	})
}
