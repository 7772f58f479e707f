package handle

import (
	"context"
	"errors"
	"testing"
)

// A free gate is taken even with a cancelled ctx (a select between the two
// chose at random); a taken one is not.
func TestGatePrefersFreeGate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var g Gate
	for i := range 1000 {
		if err := g.Enter(ctx); err != nil {
			t.Fatalf("round %d: free gate refused with a cancelled ctx: %v", i, err)
		}
		if err := g.Enter(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: taken gate: %v, want context.Canceled", i, err)
		}
		g.Leave()
	}
}

// A release that is not over keeps the hold; one that is over clears it,
// but not a newer hold taken while it ran.
func TestReentrantRelease(t *testing.T) {
	var r Reentrant[string, *Lease]
	l1, end1 := NewLease("k", 1)
	r.Take("one", l1)
	if r.Again() != l1 {
		t.Fatal("Again on a live hold")
	}
	if err := r.Release(func(string) (bool, error) { t.Fatal("free at level two"); return false, nil }); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("failed")
	if err := r.Release(func(string) (bool, error) { end1(ErrNotHeld); return false, failed }); !errors.Is(err, failed) {
		t.Fatalf("failed free: %v", err)
	}
	if h, l, ok := r.Stale(); !ok || h != "one" || l != l1 {
		t.Fatalf("after a failed free: %q %v %v, want the hold kept", h, l, ok)
	}
	l2, _ := NewLease("k", 2)
	err := r.Release(func(string) (bool, error) {
		r.Take("two", l2) // another goroutine's new acquisition meanwhile
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if h, l, ok := r.Current(); !ok || h != "two" || l != l2 {
		t.Fatalf("the newer hold was cleared: %q %v %v", h, l, ok)
	}
	if err := r.Release(func(string) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(nil); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release without a hold: %v", err)
	}
}

// TryEnter takes a free gate and never waits for a taken one.
func TestGateTryEnter(t *testing.T) {
	var g Gate
	if !g.TryEnter() {
		t.Fatal("free gate refused")
	}
	if g.TryEnter() {
		t.Fatal("taken gate taken again")
	}
	g.Leave()
	if !g.TryEnter() {
		t.Fatal("gate left, then refused")
	}
	g.Leave()
}
