package zk

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// TestInteropLeaderSelectorRecipe: baton's LeaderSelector and Curator's
// LeaderSelector on one path are one election (both are InterProcessMutex
// contenders): ours waits while Curator's leads and leads once it resigns;
// Curator's waits while ours leads and leads once our turn is over.
func TestInteropLeaderSelectorRecipe(t *testing.T) {
	p := recipesPeer(t)
	ctx := interopCtx(t)
	s := openT(t, 10*time.Second)
	path := testPath(t)

	j := startLeading(t, ctx, p, path)
	sel := baton.NewLeaderSelector(s, path, []byte("us"))
	turn := make(chan struct{})
	end := make(chan struct{})
	res := make(chan error, 1)
	go func() {
		res <- sel.Lead(ctx, func(context.Context, *baton.Lease) error {
			close(turn)
			<-end
			return nil
		})
	}()
	waitKids(t, ctx, s, path, 2)
	select {
	case <-turn:
		t.Fatal("we lead while Curator's LeaderSelector leads")
	default:
	}
	j.expect(t, ctx, "resign", "ok")
	select {
	case <-turn:
	case <-time.After(20 * time.Second):
		t.Fatal("we did not lead after Curator's selector resigned")
	}
	if id, _, err := sel.Leader(ctx); err != nil || string(id) != "us" {
		t.Fatalf("Leader: %q %v, want our id", id, err)
	}

	// Curator's selector joins while we lead: it leads only after our turn.
	j2 := startJava(t, ctx, p, "selector", path, 1)
	j2.expect(t, ctx, "start", "ok")
	waitKids(t, ctx, s, path, 2)
	close(end)
	if err := <-res; err != nil {
		t.Fatalf("Lead: %v", err)
	}
	if l := j2.line(t, ctx); l != "leader" {
		t.Fatalf("selector after our turn: %q", l)
	}
	j2.expect(t, ctx, "resign", "ok")
}
