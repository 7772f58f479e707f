package zk

import (
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// TestIfVersionNeverAny: ZooKeeper reads a version of -1 as "any
// version", and its data version is an int32 that wraps (CURATOR-688): a
// versioned write at -1, or at a version outside int32, is refused with
// ErrConflict instead of being sent unconditioned, and the data is left
// as it was.
func TestIfVersionNeverAny(t *testing.T) {
	ctx := interopCtx(t)
	s := openT(t, 10*time.Second)
	dir := testPath(t)
	c := s.Conn()
	if _, err := c.Create(ctx, dir, "v", []byte("a"), backend.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, n, err := c.Get(ctx, backend.Join(dir, "v"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{-1, 1 << 31, -1<<31 - 1} {
		bad := n
		bad.Version = v
		if err := c.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpSet, Node: bad, Data: []byte("b"), IfVersion: true}); !errors.Is(err, baton.ErrConflict) {
			t.Fatalf("Set at version %d: %v, want ErrConflict", v, err)
		}
	}
	if data, _, err := c.Get(ctx, n.Path); err != nil || string(data) != "a" {
		t.Fatalf("data %q %v, want it unchanged", data, err)
	}
}
