package batontest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// One Mutex shared by 5 goroutines lets one in at a time, as a sync.Mutex
// does: a Mutex value is not re-entrant unless made with baton.Reentrant.
func testMutexShared(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const goroutines = 5
	cycles := 40
	if testing.Short() {
		cycles = 10
	}
	m := baton.NewMutex(h.Open(t, LoadTTL), name)
	contend(t, h, ctx, name, goroutines, cycles, func(int) *baton.Mutex { return m })
}

// A Mutex that holds refuses TryLock and makes Lock wait for its Unlock,
// also after its lease was lost: the hold is over when Unlock says so.
func testMutexSharedWaits(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	m := baton.NewMutex(h.Open(t, LoadTTL), name)
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock on a Mutex that holds: %v, want ErrLocked", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = m.Lock(dctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock on a Mutex that holds: %v, want to wait until the deadline", err)
	}
	if n := lockNodes(t, h, name); n != 1 {
		t.Fatalf("%d lock nodes while held, want 1", n)
	}
	got := make(chan *baton.Lease, 1)
	go func() {
		l2, err := m.Lock(ctx)
		if err != nil {
			t.Errorf("Lock after Unlock: %v", err)
		}
		got <- l2
	}()
	select {
	case <-got:
		t.Fatal("second Lock returned while the first hold was live")
	case <-time.After(50 * time.Millisecond): // the width of a wait that must not end
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l2 := <-got
	if l2 == nil {
		return
	}
	if l2 == l || l2.Token() <= l.Token() || !errors.Is(l.Err(), baton.ErrNotHeld) {
		t.Fatalf("second hold: same lease %v, tokens %d then %d, first lease err %v", l2 == l, l.Token(), l2.Token(), l.Err())
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, baton.ErrNotHeld) {
		t.Fatalf("Unlock without a hold: %v, want ErrNotHeld", err)
	}
}
