package batontest

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// jeopardyTTL is the cut-off holder's TTL in the jeopardy test: its grace
// (a fifth, 600 ms) is the margin by which the test's goroutines may be
// late on a loaded machine.
const jeopardyTTL = 3 * time.Second

// A holder cut off the store is told in order: Jeopardy closes while the
// lease still holds (Err nil, Valid true, the deadline within the grace);
// then Done closes; then another session acquires, after the Deadline the
// holder read once cut off.
func testMutexJeopardy(t *testing.T, h Harness) {
	if h.Partition == nil {
		t.Fatalf("%s: harness has no Partition", h.Name)
	}
	ctx := testCtx(t)
	name := h.Path(t)
	holderS := h.Open(t, jeopardyTTL)
	other := h.Open(t, LoadTTL)
	held, err := baton.NewMutex(holderS, name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !held.Valid() || held.Deadline().IsZero() || time.Until(held.Deadline()) > jeopardyTTL {
		t.Fatalf("fresh lease: valid %v, deadline in %v; want valid, within the TTL", held.Valid(), time.Until(held.Deadline()))
	}
	select {
	case <-held.Jeopardy():
		t.Fatal("Jeopardy closed while in contact with the store")
	default:
	}
	heal := h.Partition(t, holderS)
	defer heal()
	var deadline time.Time
	select {
	case <-held.Jeopardy():
		// Read first, then check: a starved goroutine may come late.
		deadline = held.Deadline()
		lead := time.Until(deadline)
		if err := held.Err(); err != nil || !held.Valid() {
			t.Fatalf("in jeopardy, %v before the deadline: lease error %v, valid %v; want still held (the grace is %v)", lead, err, held.Valid(), jeopardyTTL/5)
		}
		if lead > jeopardyTTL/5 {
			t.Fatalf("in jeopardy %v before the deadline, earlier than the grace of %v", lead, jeopardyTTL/5)
		}
	case <-ctx.Done():
		t.Fatal("no Jeopardy after the holder was cut off")
	}
	l, err := baton.NewMutex(other, name).Lock(ctx)
	if err != nil {
		t.Fatalf("other Lock after the holder was cut off: %v", err)
	}
	if now := time.Now(); !now.After(deadline) {
		t.Fatalf("another session acquired %v before the holder's deadline", deadline.Sub(now))
	}
	select {
	case <-held.Done():
	default:
		t.Fatal("another session acquired while the cut-off holder still believed it held the lock")
	}
	if held.Valid() || !held.Deadline().IsZero() {
		t.Fatalf("lost lease: valid %v, deadline %v; want invalid, zero", held.Valid(), held.Deadline())
	}
	if l.Token() <= held.Token() {
		t.Fatalf("new token %d not above the lost holder's %d", l.Token(), held.Token())
	}
}

// Every lock-like recipe's lease has the session's deadline, is Valid while
// held, and after its release is invalid, has no deadline and is out of
// Jeopardy's reach (closed with Done).
func testLeaseDeadlines(t *testing.T, h Harness) {
	ctx := testCtx(t)
	s := h.Open(t, LoadTTL)
	name := h.Path(t)
	type recipe struct {
		what    string
		acquire func(context.Context) (*baton.Lease, error)
		release func(context.Context, *baton.Lease) error
	}
	m := baton.NewMutex(s, name+"/mutex")
	rw := baton.NewRWMutex(s, name+"/rw")
	sem := baton.NewSemaphore(s, name+"/sem", 2)
	e := baton.NewElection(s, name+"/election")
	ml := baton.NewMultiLock(baton.NewMutex(s, name+"/a"), baton.NewMutex(s, name+"/b"))
	for _, r := range []recipe{
		{"Mutex", m.Lock, func(ctx context.Context, _ *baton.Lease) error { return m.Unlock(ctx) }},
		{"RWMutex.RLock", rw.RLock, func(ctx context.Context, _ *baton.Lease) error { return rw.RUnlock(ctx) }},
		{"RWMutex.Lock", rw.Lock, func(ctx context.Context, _ *baton.Lease) error { return rw.Unlock(ctx) }},
		{"Semaphore", sem.Acquire, sem.Release},
		{"Election", func(ctx context.Context) (*baton.Lease, error) {
			if err := e.Campaign(ctx, []byte("v")); err != nil {
				return nil, err
			}
			return e.Lease(), nil
		}, func(ctx context.Context, _ *baton.Lease) error { return e.Resign(ctx) }},
		{"MultiLock", ml.Lock, func(ctx context.Context, _ *baton.Lease) error { return ml.Unlock(ctx) }},
	} {
		l, err := r.acquire(ctx)
		if err != nil {
			t.Fatalf("%s: %v", r.what, err)
		}
		d := time.Until(l.Deadline())
		if !l.Valid() || d <= 0 || d > LoadTTL {
			t.Errorf("%s: held lease valid %v, deadline in %v; want valid, within the TTL", r.what, l.Valid(), d)
		}
		if err := r.release(ctx, l); err != nil {
			t.Fatalf("%s: release: %v", r.what, err)
		}
		select {
		case <-l.Jeopardy():
		default:
			t.Errorf("%s: Jeopardy still open after the release", r.what)
		}
		if l.Valid() || !l.Deadline().IsZero() {
			t.Errorf("%s: released lease valid %v, deadline %v; want invalid, zero", r.what, l.Valid(), l.Deadline())
		}
	}
}
