package zk

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/layout"
)

// startLeading starts Curator's LeaderSelector on path and waits until it
// leads.
func startLeading(t *testing.T, ctx context.Context, p peer, path string) *running {
	t.Helper()
	j := startJava(t, ctx, p, "selector", path, 1)
	j.expect(t, ctx, "start", "ok")
	if l := j.line(t, ctx); l != "leader" {
		t.Fatalf("selector: %q", l)
	}
	return j
}

// TestInteropLeaderSelector: Curator's LeaderSelector is an
// InterProcessMutex ("lock-" nodes) that orders only lock nodes, so it
// leads beside a baton (LeaderLatch-layout) leader; no node name satisfies
// both orders. Campaign refuses to join behind it, and status flags the
// mix when it happens the other way round.
func TestInteropLeaderSelector(t *testing.T) {
	p := recipesPeer(t)
	ctx := interopCtx(t)
	s := openT(t, 10*time.Second)

	// Curator leads first: Campaign refuses.
	path := testPath(t)
	j := startLeading(t, ctx, p, path)
	if err := baton.NewElection(s, path).Campaign(ctx, []byte("us")); !errors.Is(err, baton.ErrIncompatible) {
		t.Fatalf("Campaign behind a LeaderSelector: %v, want ErrIncompatible", err)
	}
	if kids := kidsOf(t, ctx, s, path); len(kids) != 1 {
		t.Fatalf("Campaign left nodes: %+v", kids)
	}
	j.expect(t, ctx, "resign", "ok")

	// We lead first: the LeaderSelector leads too (the unsafe mix), and
	// status flags it.
	path = testPath(t)
	e := baton.NewElection(s, path)
	if err := e.Campaign(ctx, []byte("us")); err != nil {
		t.Fatal(err)
	}
	j2 := startLeading(t, ctx, p, path)
	l, err := layout.Read(ctx, s.Conn(), layout.StoreZooKeeper, path)
	if err != nil {
		t.Fatal(err)
	}
	r := layout.Describe(l, time.Now())
	if !hasWarning(r, layout.WarnLeaderSelector) || r.Entries[0].Role != layout.RoleLeader || r.Entries[0].Value != "us" {
		t.Fatalf("status of the mixed election: %+v", r)
	}
	j2.expect(t, ctx, "resign", "ok")
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
