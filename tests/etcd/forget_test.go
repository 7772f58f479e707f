package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/proxy"
)

// A create whose reply is lost, and whose cleanup delete cannot get through
// either, leaves no key behind once the store can be reached again: the
// delete goes on in the background while the session lives. Left there,
// the key, on a lease still renewed, would hold the line it queued in for
// the session's life.
func TestFaultLostCreateIsForgotten(t *testing.T) {
	ctx := testCtx(t)
	const dir = "/faults/forget"
	p := proxy.Start(t, server(t).Addr())
	// A TTL that outlives the cut: the test is about the key, not the
	// lease.
	s := openT(t, []string{"http://" + p.Addr()}, etcd.WithTTL(30*time.Second))
	watcher := openT(t, server(t).Endpoints(), etcd.WithTTL(30*time.Second))
	// The create reaches the server and its reply is lost; once the key
	// is there, nothing gets through any more.
	p.DropReplies()
	made := make(chan error, 1)
	go func() {
		err := watcher.Conn().WaitChildren(ctx, dir, nil)
		p.Blackhole()
		made <- err
	}()
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := s.Conn().Create(cctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	cancel()
	if err == nil {
		t.Fatal("create succeeded with its reply lost")
	}
	if err := <-made; err != nil {
		t.Fatal(err)
	}
	// Create has returned: its own cleanup has failed by now.
	p.Heal()
	if !await.Within(15*time.Second, func() bool {
		kids, err := watcher.Conn().Children(ctx, dir)
		return err == nil && len(kids) == 0
	}) {
		kids, _ := watcher.Conn().Children(context.Background(), dir)
		t.Fatalf("the lost create's key is still there 15 s after the store came back: %v", kids)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("session lost: %v (the test needs it alive)", err)
	}
}
