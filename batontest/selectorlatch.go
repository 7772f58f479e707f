package batontest

import (
	"context"
	"errors"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// A LeaderSelector on a name where an Election leads refuses to lead
// (ErrIncompatible) instead of leading beside it: a selector's lock node
// orders only lock nodes and would not wait for the Election's latch. fn
// never runs and the selector leaves no node.
func testSelectorBesideElection(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	e := baton.NewElection(ss[0], name)
	if err := e.Campaign(ctx, []byte("latch")); err != nil {
		t.Fatal(err)
	}
	ran := false
	err := baton.NewLeaderSelector(ss[1], name, []byte("selector")).Lead(ctx, func(context.Context, *baton.Lease) error {
		ran = e.Lease().Err() == nil
		return nil
	})
	if ran {
		t.Fatal("the selector led while the Election led")
	}
	if !errors.Is(err, baton.ErrIncompatible) {
		t.Fatalf("Lead beside a leading Election: %v, want ErrIncompatible", err)
	}
	for _, k := range children(t, h, name) {
		if k.Kind == backend.KindLock {
			t.Fatalf("the refused selector left %s", k.Name)
		}
	}
	if e.Lease().Err() != nil {
		t.Fatalf("the Election's leadership ended: %v", e.Lease().Err())
	}
}
