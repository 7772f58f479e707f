package zk

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// takeResult is what a Take returned.
type takeResult struct {
	data []byte
	err  error
}

// The queue loss seen in Queue/EightByEightOneKilled, on the wire: a Take
// whose delete the server applied, cancelled while the reply is on its way
// (held back here), must still return the item; it used to return
// ctx.Err() and the item was gone, delivered to nobody. The same for a
// ReliableQueue's claim, which used to stay behind and hide the item.
func TestTakeCancelledAwaitingReply(t *testing.T) {
	for _, tc := range []struct {
		name string
		take func(ctx context.Context, s *baton.Session, dir string) ([]byte, error)
		put  func(ctx context.Context, s *baton.Session, dir string, data []byte) error
	}{
		{"Queue",
			func(ctx context.Context, s *baton.Session, dir string) ([]byte, error) {
				return baton.NewQueue(s, dir).Take(ctx)
			},
			func(ctx context.Context, s *baton.Session, dir string, data []byte) error {
				return baton.NewQueue(s, dir).Put(ctx, data)
			}},
		{"ReliableQueue",
			func(ctx context.Context, s *baton.Session, dir string) ([]byte, error) {
				q := baton.NewReliableQueue(s, dir)
				it, err := q.Take(ctx)
				if err != nil {
					return nil, err
				}
				return it.Data, q.Ack(context.WithoutCancel(ctx), it)
			},
			func(ctx context.Context, s *baton.Session, dir string, data []byte) error {
				return baton.NewReliableQueue(s, dir).Put(ctx, data)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			dir := testPath(t)
			h := newReplyHolder()
			var letGo sync.Once
			unhold := func() { letGo.Do(func() { close(h.release) }) }
			t.Cleanup(unhold) // before the sessions close (cleanups run last first)
			s, other := openT(t, 0, withHolder(h)), openT(t, 0)
			t.Cleanup(unhold)
			// A first item, taken as usual, makes the directories the
			// commit of the next Take needs: then that commit is the
			// only multi it sends.
			for _, v := range []string{"warm", "last"} {
				if err := tc.put(ctx, other, dir, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			if v, err := tc.take(ctx, s, dir); err != nil || string(v) != "warm" {
				t.Fatalf("first Take: %q, %v", v, err)
			}
			tctx, cancel := context.WithCancel(ctx)
			defer cancel()
			h.holdNext()
			res := make(chan takeResult, 1)
			go func() {
				v, err := tc.take(tctx, s, dir)
				res <- takeResult{v, err}
			}()
			select {
			case <-h.held:
			case <-time.After(20 * time.Second):
				t.Fatal("the Take's commit never got a reply")
			}
			// The server has applied the commit; the reply is held.
			cancel()
			var r takeResult
			select {
			case r = <-res:
				// Returned while its reply was still held: it cannot
				// know what the commit did.
				unhold()
			case <-time.After(testTTL / 4):
				// Still waiting for the outcome, as it must: let it in
				// (before the held connection counts as dead).
				unhold()
				r = <-res
			}
			switch {
			case r.err == nil:
				if string(r.data) != "last" {
					t.Fatalf("Take got %q, want last", r.data)
				}
			case errors.Is(r.err, context.Canceled):
				q := baton.NewReliableQueue(other, dir)
				if _, err := q.Poll(ctx); errors.Is(err, baton.ErrEmpty) {
					t.Fatal("Take cancelled with its commit applied returned nothing, and no other consumer can take the item (lost, or hidden by an orphan claim)")
				} else if err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatalf("Take: %v", r.err)
			}
		})
	}
}
