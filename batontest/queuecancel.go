package batontest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// lateReplyConn is a Conn whose next successful Commit runs hook (a
// cancel of the caller's ctx) once the store has applied it, and then
// answers as a network backend does when the reply comes after the
// caller's ctx ended: with ctx.Err(). The commit stays applied.
type lateReplyConn struct {
	backend.Conn
	once sync.Once
	hook func()
}

func (c *lateReplyConn) Commit(ctx context.Context, guard backend.Node, ops ...backend.Op) error {
	err := c.Conn.Commit(ctx, guard, ops...)
	if err != nil {
		return err
	}
	c.once.Do(c.hook)
	return ctx.Err()
}

// taker is one queue's Take and Poll, for the cancel tests.
type taker struct {
	put  func(ctx context.Context, s *baton.Session, name string, data []byte) error
	take func(ctx context.Context, s *baton.Session, name string, poll bool) ([]byte, error)
	// length counts the items; nil: Queue.Len.
	length func(ctx context.Context, s *baton.Session, name string) (int, error)
}

var (
	queueTaker = taker{
		put: func(ctx context.Context, s *baton.Session, name string, data []byte) error {
			return baton.NewQueue(s, name).Put(ctx, data)
		},
		take: func(ctx context.Context, s *baton.Session, name string, poll bool) ([]byte, error) {
			q := baton.NewQueue(s, name)
			if poll {
				return q.Poll(ctx)
			}
			return q.Take(ctx)
		},
	}
	reliableTaker = taker{
		put: func(ctx context.Context, s *baton.Session, name string, data []byte) error {
			return baton.NewReliableQueue(s, name).Put(ctx, data)
		},
		take: func(ctx context.Context, s *baton.Session, name string, poll bool) ([]byte, error) {
			q := baton.NewReliableQueue(s, name)
			get := q.Take
			if poll {
				get = q.Poll
			}
			it, err := get(ctx)
			if err != nil {
				return nil, err
			}
			return it.Data, q.Ack(context.WithoutCancel(ctx), it) // ctx may have ended after Take
		},
	}
)

func testQueueCancelAfterSend(t *testing.T, h Harness) { cancelAfterSend(t, h, queueTaker) }
func testReliableQueueCancelAfterSend(t *testing.T, h Harness) {
	cancelAfterSend(t, h, reliableTaker)
}

// A Take whose ctx ends after its claim (Queue, ReliableQueue,
// PriorityQueue) reached the store, before the reply did, never loses the
// item: either it returns the item, or the item is still there, unclaimed,
// for another consumer.
func cancelAfterSend(t *testing.T, h Harness, tk taker) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	if err := tk.put(ctx, ss[0], name, []byte("only")); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	late := baton.NewSession(&lateReplyConn{Conn: ss[1].Conn(), hook: cancel}, baton.Telemetry{})
	v, err := tk.take(tctx, late, name, false)
	switch {
	case err == nil:
		if string(v) != "only" {
			t.Fatalf("Take got %q, want only", v)
		}
	case errors.Is(err, context.Canceled):
		// Then the item must still be there, unclaimed.
		v, err := tk.take(ctx, ss[0], name, true)
		if errors.Is(err, baton.ErrEmpty) {
			t.Fatal("a Take cancelled after its request reached the store returned nothing, and no other consumer can take the item (lost, or hidden by an orphan claim)")
		}
		if err != nil || string(v) != "only" {
			t.Fatalf("the item after a cancelled Take: %q, %v", v, err)
		}
	default:
		t.Fatalf("Take: %v", err)
	}
	length := tk.length
	if length == nil {
		length = func(ctx context.Context, s *baton.Session, name string) (int, error) {
			return baton.NewQueue(s, name).Len(ctx)
		}
	}
	if n, err := length(ctx, ss[0], name); err != nil || n != 0 {
		t.Fatalf("Len %d, %v after the item was taken", n, err)
	}
}

func testQueueTakeDeadSession(t *testing.T, h Harness) { takeDeadSession(t, h, queueTaker) }
func testReliableQueueTakeDeadSession(t *testing.T, h Harness) {
	takeDeadSession(t, h, reliableTaker)
}

// A Take on a session that is gone reports the loss, even when its ctx
// has ended too: a consumer must learn that it has to start over. (A
// killed consumer that was not scheduled before the test cancelled it
// used to end with context.Canceled, and EightByEightOneKilled failed.)
func takeDeadSession(t *testing.T, h Harness, tk taker) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	if err := tk.put(ctx, ss[1], name, []byte("kept")); err != nil {
		t.Fatal(err)
	}
	h.Expire(t, ss[0])
	select {
	case <-ss[0].Done():
	case <-time.After(timeout / 2):
		t.Fatal("the expired session did not end")
	}
	for _, poll := range []bool{false, true} {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := tk.take(cctx, ss[0], name, poll); !baton.IsSessionGone(err) {
			t.Fatalf("Take (poll %v) on an expired session with a cancelled ctx: %v, want a session error", poll, err)
		}
	}
	if v, err := tk.take(ctx, ss[1], name, true); err != nil || string(v) != "kept" {
		t.Fatalf("the item after Takes on a dead session: %q, %v", v, err)
	}
}
