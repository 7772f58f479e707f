package batontest

import (
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// permitTTL is the time to live of the permits in the tests: long enough
// that a loaded machine gets the test's steps in before it runs out.
const permitTTL = 600 * time.Millisecond

// A permit nobody extends expires on its holder: its Lease ends with
// ErrPermitExpired no sooner than its time to live after Acquire returned,
// and the next acquirer gets the permit after that; the holder's Release
// then reports the expiry.
func testPermitExpires(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	a, b := baton.NewPermitSemaphore(ss[0], name, 1), baton.NewPermitSemaphore(ss[1], name, 1)
	if _, err := a.Acquire(ctx, 0); !errors.Is(err, baton.ErrInvalidTTL) {
		t.Fatalf("Acquire with no TTL: %v, want ErrInvalidTTL", err)
	}
	pa, err := a.Acquire(ctx, permitTTL)
	got := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquire(ctx, time.Second); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryAcquire while held: %v, want ErrLocked", err)
	}
	info, err := b.Permit(ctx, pa.ID)
	if err != nil || info.TTL != permitTTL || info.Holder.PID == 0 || info.Waiting {
		t.Fatalf("Permit(%s): %+v %v", pa.ID, info, err)
	}
	pb, err := b.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	acquired := time.Now()
	select {
	case <-pa.Lease.Done():
	default:
		t.Fatal("the next holder got the permit before the expired holder's Lease ended")
	}
	if !errors.Is(pa.Lease.Err(), baton.ErrPermitExpired) || !errors.Is(pa.Lease.Err(), baton.ErrLost) {
		t.Fatalf("expired Lease.Err: %v", pa.Lease.Err())
	}
	if el := acquired.Sub(got); el < permitTTL {
		t.Fatalf("permit taken over %v after it was granted, before its time to live %v", el, permitTTL)
	}
	if err := a.Release(ctx, pa); !errors.Is(err, baton.ErrPermitExpired) {
		t.Fatalf("Release after expiry: %v, want ErrPermitExpired", err)
	}
	if _, err := b.Permit(ctx, pa.ID); !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("Permit of the expired permit: %v, want ErrNotFound", err)
	}
	if err := b.Release(ctx, pb); err != nil {
		t.Fatal(err)
	}
	if ps, err := a.Permits(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("Permits after release: %+v %v", ps, err)
	}
}

// Another process extends a permit: it outlives its first time to live,
// lasting at least the new one from the extension; a waiter gets it only
// after that.
func testPermitExtend(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	a, b, admin := baton.NewPermitSemaphore(ss[0], name, 1), baton.NewPermitSemaphore(ss[1], name, 1), baton.NewPermitSemaphore(ss[2], name, 1)
	pa, err := a.Acquire(ctx, permitTTL)
	if err != nil {
		t.Fatal(err)
	}
	extended := time.Now()
	if err := admin.Extend(ctx, pa.ID, 3*permitTTL); err != nil {
		t.Fatal(err)
	}
	if info, err := admin.Permit(ctx, pa.ID); err != nil || info.TTL != 3*permitTTL {
		t.Fatalf("after Extend: %+v %v", info, err)
	}
	pb, err := b.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(extended); el < 3*permitTTL {
		t.Fatalf("extended permit taken over %v after the extension, before its new time to live %v", el, 3*permitTTL)
	}
	if !errors.Is(pa.Lease.Err(), baton.ErrPermitExpired) {
		t.Fatalf("Lease.Err: %v", pa.Lease.Err())
	}
	if err := admin.Extend(ctx, pa.ID, time.Second); !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("Extend of an expired permit: %v, want ErrNotFound", err)
	}
	if err := admin.Extend(ctx, "nonsense", time.Second); !errors.Is(err, baton.ErrInvalidName) {
		t.Fatalf("Extend of a bad id: %v, want ErrInvalidName", err)
	}
	_ = b.Release(ctx, pb)
}

// Another process releases a permit by its id: the holder's Lease ends
// (ErrRevoked), a waiter gets the permit, and the list shows who holds and
// who waits.
func testPermitReleaseByID(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	a, b, admin := baton.NewPermitSemaphore(ss[0], name, 1), baton.NewPermitSemaphore(ss[1], name, 1), baton.NewPermitSemaphore(ss[2], name, 1)
	pa, err := a.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *baton.Permit, 1)
	go func() {
		pb, err := b.Acquire(ctx, time.Minute)
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- pb
	}()
	if !settles(func() bool { ps, err := admin.Permits(ctx); return err == nil && len(ps) == 2 }) {
		t.Fatal("the waiter's lease never showed")
	}
	ps, _ := admin.Permits(ctx)
	if ps[0].ID != pa.ID || ps[0].Waiting || !ps[1].Waiting || ps[1].TTL != time.Minute {
		t.Fatalf("Permits: %+v", ps)
	}
	if err := admin.ReleaseID(ctx, pa.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-pa.Lease.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("holder's Lease still live after its permit was released by id")
	}
	if !errors.Is(pa.Lease.Err(), baton.ErrRevoked) {
		t.Fatalf("Lease.Err: %v, want ErrRevoked", pa.Lease.Err())
	}
	pb := <-got
	if pb == nil {
		t.FailNow()
	}
	if err := a.Release(ctx, pa); !errors.Is(err, baton.ErrLost) {
		t.Fatalf("holder's Release after release by id: %v, want ErrLost", err)
	}
	if err := admin.ReleaseID(ctx, pa.ID); err != nil {
		t.Fatalf("ReleaseID of a gone permit: %v", err)
	}
	if err := b.Release(ctx, pb); err != nil {
		t.Fatal(err)
	}
}
