package zk

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// TestBarrierOverDirectory: a barrier set on a name that is the container
// directory of a lock (NAME/db was locked) is refused with ErrIncompatible,
// because ZooKeeper removes that container once it is empty and the
// barrier would fall unseen; Set took it for a barrier already up before.
// A barrier of its own name, with nothing under it, is set as ever.
func TestBarrierOverDirectory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := openT(t, 0)
	dir := testPath(t)
	m := baton.NewMutex(s, dir+"/db")
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	b := baton.NewBarrier(s, dir)
	if err := b.Set(ctx); !errors.Is(err, baton.ErrIncompatible) {
		t.Fatalf("Set on the directory of a lock: %v, want ErrIncompatible", err)
	}
	own := baton.NewBarrier(s, dir+"-barrier")
	if err := own.Set(ctx); err != nil {
		t.Fatal(err)
	}
	if err := own.Set(ctx); err != nil {
		t.Fatalf("Set on a barrier already up: %v", err)
	}
	if up, err := own.IsSet(ctx); !up || err != nil {
		t.Fatalf("IsSet: %v, %v", up, err)
	}
	if err := own.Remove(ctx); err != nil {
		t.Fatal(err)
	}
}
