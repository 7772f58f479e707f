// The line every lock-like recipe waits in: a contender queues a node and
// waits, herd-free, until the nodes before it that block it are gone.

package baton

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/telemetry"
)

// cleanupTimeout bounds the work done after a cancelled wait to remove the
// node it left.
const cleanupTimeout = 5 * time.Second

// blockerFunc returns the index in kids of the node that the node at index
// me must wait for, or -1 when it may proceed.
type blockerFunc func(kids []backend.Node, me int) int

// enqueue creates our node in dir and lists its siblings, in one round trip
// where the backend can.
func enqueue(ctx context.Context, c backend.Conn, dir, kind string, data []byte) (backend.Node, []backend.Node, error) {
	if cl, ok := c.(backend.CreateLister); ok {
		return cl.CreateAndList(ctx, dir, kind, data, backend.Ephemeral|backend.Sequential)
	}
	n, err := c.Create(ctx, dir, kind, data, backend.Ephemeral|backend.Sequential)
	if err != nil {
		return backend.Node{}, nil, err
	}
	kids, err := c.Children(ctx, dir)
	if err != nil {
		removeNode(ctx, c, n)
		return backend.Node{}, nil, err
	}
	return n, kids, nil
}

// turn is what a contender queues for: a node of kind in dir, carrying
// data, that may go ahead once blocker finds nothing before it to wait for.
type turn struct {
	dir, kind string
	data      []byte
	blocker   blockerFunc
	// try never waits: busy says from a listing whether the lock is taken
	// before queuing, and a node that would have to wait is removed; both
	// give ErrLocked.
	try  bool
	busy func([]backend.Node) bool
}

// takeTurn queues our node for t and waits until its blocker clears it. A
// failed or cancelled wait removes our node.
func takeTurn(ctx context.Context, a *telemetry.Acquire, c backend.Conn, t turn) (backend.Node, error) {
	if t.try {
		return tryTurn(ctx, a, c, t)
	}
	me, kids, err := enqueue(ctx, c, t.dir, t.kind, t.data)
	if err != nil {
		return backend.Node{}, err
	}
	if err := waitTurn(ctx, a, c, t.dir, kids, me, t.blocker); err != nil {
		removeNode(ctx, c, me)
		if ctx.Err() != nil {
			return backend.Node{}, ctx.Err()
		}
		return backend.Node{}, err
	}
	return me, nil
}

// tryTurn is takeTurn that never waits.
func tryTurn(ctx context.Context, a *telemetry.Acquire, c backend.Conn, t turn) (backend.Node, error) {
	// A contender already in line means the lock is taken: answer without
	// creating a node.
	kids, err := c.Children(ctx, t.dir)
	if err != nil {
		return backend.Node{}, err
	}
	if t.busy(kids) {
		return backend.Node{}, fmt.Errorf("%w: %s", ErrLocked, t.dir)
	}
	me, kids, err := enqueue(ctx, c, t.dir, t.kind, t.data)
	if err != nil {
		return backend.Node{}, err
	}
	a.Queued(indexOf(kids, me))
	if i := indexOf(kids, me); i < 0 || t.blocker(kids, i) >= 0 {
		removeNode(ctx, c, me)
		return backend.Node{}, fmt.Errorf("%w: %s", ErrLocked, t.dir)
	}
	return me, nil
}

// indexOf finds n among kids by path.
func indexOf(kids []backend.Node, n backend.Node) int {
	for i, k := range kids {
		if k.Path == n.Path {
			return i
		}
	}
	return -1
}

// waitTurn waits until our node me, listed in kids (the children of dir),
// has no blocker. It is the seeds' herd-free wait: each waiter watches only
// the one node it must follow, so a release wakes one waiter.
//
// Nodes created after a listing always sort after us, so a listing is a
// superset of everything that can block us. Before waiting we work out
// whether we would be clear once the blocker goes: if nothing else in the
// listing could block us, its deletion is our turn and costs no request.
// Otherwise the blocker's going says nothing certain about the nodes
// before it (they left first in the usual FIFO hand-off, but one may have
// been cancelled out of order), so we list dir again: one request, however
// long the line. Walking the stale listing instead would cost one request
// per node ahead of us. The listing is dropped while we wait, so a waiter
// holds one node, not the whole line.
func waitTurn(ctx context.Context, a *telemetry.Acquire, c backend.Conn, dir string, kids []backend.Node, me backend.Node, blocker blockerFunc) error {
	if a != nil {
		a.Queued(indexOf(kids, me))
	}
	for {
		i := indexOf(kids, me)
		if i < 0 {
			return fmt.Errorf("%w: our node %s is gone", ErrLost, me.Path)
		}
		b := blocker(kids, i)
		if b < 0 {
			return nil
		}
		wait := kids[b]
		rest := make([]backend.Node, 0, i)
		rest = append(append(rest, kids[:b]...), kids[b+1:i+1]...)
		more := blocker(rest, len(rest)-1) >= 0
		kids, rest = nil, nil
		a.Wait()
		if err := c.WaitGone(ctx, wait); err != nil {
			return err
		}
		if !more {
			return nil
		}
		var err error
		if kids, err = relist(ctx, c, dir, me); err != nil {
			return err
		}
	}
}

// relist lists dir again for a waiter whose node me was listed since its
// create: with the backend's Relister where it has one (complete up to
// me, which is all waitTurn reads), else Children.
func relist(ctx context.Context, c backend.Conn, dir string, me backend.Node) ([]backend.Node, error) {
	if r, ok := c.(backend.Relister); ok {
		return r.Relist(ctx, dir, me)
	}
	return c.Children(ctx, dir)
}

// removeNode deletes n after a failed or cancelled wait, even when ctx is
// already done. It waits up to cleanupTimeout; if the store cannot be
// reached in that time (a cut connection), it goes on trying in the
// background until the node is gone or the session ends: a node left
// behind would stall every waiter queued after it for the session's life.
func removeNode(ctx context.Context, c backend.Conn, n backend.Node) {
	ctx = context.WithoutCancel(ctx)
	if deleteWithin(ctx, c, n) {
		return
	}
	keepRemoving(ctx, c, n)
}

// keepRemoving goes on deleting n in the background, with growing pauses,
// until it is gone or the session ends (its ephemeral nodes go with it).
// It is for a node nobody holds any more whose delete failed: left there
// while the session lives, it would stall every waiter queued after it.
// The delete removes that incarnation only, so a late one harms nothing.
func keepRemoving(ctx context.Context, c backend.Conn, n backend.Node) {
	ctx = context.WithoutCancel(ctx)
	go func() {
		delay := cleanupRetry
		for !deleteWithin(ctx, c, n) {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-c.Done():
				t.Stop()
				return
			}
			delay = min(2*delay, cleanupTimeout)
		}
	}()
}

// cleanupRetry is the first pause between removeNode's background tries.
const cleanupRetry = 100 * time.Millisecond

// deleteWithin deletes n within cleanupTimeout, and reports whether that
// settled it: deleted (or gone), or the session is over (its ephemeral
// nodes go with it).
func deleteWithin(ctx context.Context, c backend.Conn, n backend.Node) bool {
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	err := c.Delete(ctx, n)
	return err == nil || IsSessionGone(err) || c.Err() != nil
}

// prevOfKinds returns a blockerFunc that waits for the nearest earlier node
// whose kind is one of kinds.
func prevOfKinds(kinds ...string) blockerFunc {
	return func(kids []backend.Node, me int) int {
		for j := me - 1; j >= 0; j-- {
			for _, k := range kinds {
				if kids[j].Kind == k {
					return j
				}
			}
		}
		return -1
	}
}
