package batontest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// SharedCount: the first reader makes the node with the seed (4 bytes,
// big-endian); TrySet succeeds only at the version read (a stale version
// is refused and changes nothing); Set writes whatever the version;
// Watch sends the count now and after a change by another session.
func testSharedCount(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	defer removeNodes(t, ss[0], name)
	a, b := baton.NewSharedCount(ss[0], name, 5), baton.NewSharedCount(ss[1], name, 9)
	va, err := a.Get(ctx)
	if err != nil || va.Value != 5 {
		t.Fatalf("first Get: %+v %v, want the seed 5", va, err)
	}
	vb, err := b.Get(ctx)
	if err != nil || vb.Value != 5 || vb.Version != va.Version {
		t.Fatalf("second client's Get: %+v %v, want 5 at version %d", vb, err, va.Version)
	}
	if ok, err := a.TrySet(ctx, va, 6); !ok || err != nil {
		t.Fatalf("TrySet at the version read: %v %v", ok, err)
	}
	if ok, err := b.TrySet(ctx, vb, 7); ok || err != nil {
		t.Fatalf("TrySet at a stale version: %v %v, want false", ok, err)
	}
	data, _, err := ss[1].Conn().Get(ctx, name)
	if err != nil || string(data) != string([]byte{0, 0, 0, 6}) {
		t.Fatalf("node data %v %v, want 6 as 4 big-endian bytes", data, err)
	}
	vb, err = b.Get(ctx)
	if err != nil || vb.Value != 6 || vb.Version == va.Version {
		t.Fatalf("Get after TrySet: %+v %v", vb, err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w := b.Watch(wctx)
	if v := next(t, w); v.Value != 6 {
		t.Fatalf("Watch sent %d first, want 6", v.Value)
	}
	if err := a.Set(ctx, -100); err != nil {
		t.Fatal(err)
	}
	if v := next(t, w); v.Value != -100 {
		t.Fatalf("Watch sent %d after Set(-100)", v.Value)
	}
	stop()
	for range w {
	}
}

func next(t *testing.T, w <-chan baton.VersionedCount) baton.VersionedCount {
	t.Helper()
	select {
	case v, ok := <-w:
		if !ok {
			t.Fatal("Watch closed")
		}
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("Watch sent nothing")
	}
	return baton.VersionedCount{}
}

// AtomicLong: concurrent Adds on several sessions, with few optimistic
// tries so that updates collide and fall back to the promoted lock, lose
// no update: the final value is the number of Adds and every Add saw a
// distinct value before it. The node holds 8 big-endian bytes; data that
// is not a counter is an error.
func testAtomicLongAdds(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const clients, adds = 4, 15
	ss := sessions(t, h, clients)
	defer removeNodes(t, ss[0], backend.Join(name, "n"), backend.Join(name, "bad"))
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := baton.NewAtomicLong(ss[i], backend.Join(name, "n"), baton.PromotedToLock(backend.Join(name, "lock")), baton.OptimisticTries(1))
			for range adds {
				pre, post, err := a.Add(ctx, 1)
				if err != nil {
					t.Errorf("client %d Add: %v", i, err)
					return
				}
				mu.Lock()
				dup := seen[pre]
				seen[pre] = true
				mu.Unlock()
				if dup || post != pre+1 {
					t.Errorf("client %d Add: %d → %d (a value seen twice, or not +1)", i, pre, post)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	a := baton.NewAtomicLong(ss[0], backend.Join(name, "n"))
	if v, err := a.Get(ctx); err != nil || v != clients*adds {
		t.Fatalf("after %d Adds: %d %v", clients*adds, v, err)
	}
	data, _, err := ss[0].Conn().Get(ctx, backend.Join(name, "n"))
	if err != nil || len(data) != 8 || data[7] != clients*adds {
		t.Fatalf("node data %v %v, want 8 big-endian bytes", data, err)
	}
	if pre, err := a.Set(ctx, -1); err != nil || pre != clients*adds {
		t.Fatalf("Set: %d %v", pre, err)
	}
	if v, err := baton.NewAtomicLong(ss[1], backend.Join(name, "missing")).Get(ctx); err != nil || v != 0 {
		t.Fatalf("Get of a missing node: %d %v, want 0", v, err)
	}
	if _, err := ss[0].Conn().Create(ctx, name, "bad", []byte{1, 2, 3}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := baton.NewAtomicLong(ss[0], backend.Join(name, "bad")).Get(ctx); !errors.Is(err, baton.ErrBadCounter) {
		t.Fatalf("AtomicLong on 3 bytes: %v, want ErrBadCounter", err)
	}
	if _, err := baton.NewSharedCount(ss[0], backend.Join(name, "bad"), 0).Get(ctx); !errors.Is(err, baton.ErrBadCounter) {
		t.Fatalf("SharedCount on 3 bytes: %v, want ErrBadCounter", err)
	}
}

// removeNodes deletes the persistent nodes a test made, so that a run
// that reuses its paths (-count) starts clean.
func removeNodes(t *testing.T, s *baton.Session, paths ...string) {
	ctx := context.WithoutCancel(testCtx(t))
	for _, p := range paths {
		if _, n, err := s.Conn().Get(ctx, p); err == nil {
			if err := s.Conn().Delete(ctx, n); err != nil {
				t.Errorf("remove %s: %v", p, err)
			}
		}
	}
}

// AtomicLong under contention, with no lock named: 20 writers at once on
// 5 sessions, each Add with the default tries and with a single one (so
// that nearly every Add collides), all succeed (an update whose tries run
// out takes turns on the default promoted lock, NAME.lock) and the final
// value is exact. Without that default, Adds failed with ErrConflict.
func testAtomicLongContention(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := backend.Join(h.Path(t), "n")
	const sessionsN, writers, adds = 5, 20, 3
	ss := sessions(t, h, sessionsN)
	defer removeNodes(t, ss[0], name)
	if got := baton.NewAtomicLong(ss[0], name).LockName(); got != name+".lock" {
		t.Fatalf("default promoted lock %q, want %q", got, name+".lock")
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var opts []baton.AtomicLongOption
			if i%2 == 1 {
				opts = append(opts, baton.OptimisticTries(1))
			}
			a := baton.NewAtomicLong(ss[i%sessionsN], name, opts...)
			for range adds {
				if _, _, err := a.Add(ctx, 1); err != nil {
					t.Errorf("writer %d Add: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if v, err := baton.NewAtomicLong(ss[0], name).Get(ctx); err != nil || v != writers*adds {
		t.Fatalf("after %d Adds: %d %v", writers*adds, v, err)
	}
	// PromotedToLock("") turns the promotion off.
	off := baton.NewAtomicLong(ss[1], name, baton.PromotedToLock(""), baton.OptimisticTries(1))
	if off.LockName() != "" {
		t.Fatalf("PromotedToLock(\"\") left the lock %q", off.LockName())
	}
}
