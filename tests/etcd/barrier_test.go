package etcd_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/etcd"
)

// A barrier may be named by one element ("deploy", "/deploy"), a key at
// the top of the keyspace, as `baton barrier set deploy` does.
func TestBarrierTopLevelName(t *testing.T) {
	ctx := testCtx(t)
	s := openT(t, server(t).Endpoints(), etcd.WithTTL(5*time.Second))
	for _, name := range []string{fmt.Sprintf("barrier-%d", time.Now().UnixNano()), fmt.Sprintf("/barrier-%d", time.Now().UnixNano())} {
		b := baton.NewBarrier(s, name)
		if err := b.Set(ctx); err != nil {
			t.Fatalf("Set %q: %v", name, err)
		}
		waited := make(chan error, 1)
		go func() { waited <- baton.NewBarrier(s, name).Wait(ctx) }()
		if err := b.Remove(ctx); err != nil {
			t.Fatalf("Remove %q: %v", name, err)
		}
		if err := <-waited; err != nil {
			t.Fatalf("Wait %q: %v", name, err)
		}
		if _, _, err := s.Conn().Get(ctx, name); err == nil {
			t.Fatalf("%q still there after Remove", name)
		}
	}
	// Listing the whole keyspace stays refused.
	if _, err := s.Conn().Children(ctx, ""); err == nil {
		t.Fatal("Children of the root answered")
	}
}
