package baton

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/handle"
	"github.com/batonhq/baton/internal/telemetry"
)

// nodeHold is a node a recipe holds and the lease handed out for it. The
// lease ends as lost when the session ends or when someone else removes
// the node; it ends as released when free gives the node back.
type nodeHold struct {
	s     *Session
	node  backend.Node
	lease *Lease
	end   func(error)
	stop  context.CancelFunc // stops watching the session and the node
	quiet chan struct{}      // closed once the watching has stopped

	revocable bool // also watch the node's data for RevokeMarker
}

// holdNode returns the hold of our node me on the lock named key, and
// starts watching the session and the node.
func holdNode(s *Session, tel *telemetry.Handle, a *telemetry.Acquire, key string, me backend.Node) *nodeHold {
	return holdNodeRevocable(s, tel, a, key, me, false)
}

// holdNodeRevocable is holdNode that, with revocable, also watches our
// node's data for a revocation request (see Revocable).
func holdNodeRevocable(s *Session, tel *telemetry.Handle, a *telemetry.Acquire, key string, me backend.Node, revocable bool) *nodeHold {
	l, end := s.newLease(tel, a, key, me.Token)
	ctx, stop := context.WithCancel(context.Background())
	h := &nodeHold{s: s, node: me, lease: l, end: end, stop: stop, quiet: make(chan struct{}), revocable: revocable}
	go h.watch(ctx)
	return h
}

// watch ends the lease when the session ends or the node is removed, until
// ctx is cancelled.
func (h *nodeHold) watch(ctx context.Context) {
	defer close(h.quiet)
	removed, waited := make(chan struct{}), make(chan struct{})
	defer func() { <-waited }()
	if h.revocable {
		asked := make(chan struct{})
		defer func() { <-asked }()
		go func() {
			defer close(asked)
			watchRevoke(ctx, h.s, h.node, h.lease)
		}()
	}
	go func() {
		defer close(waited)
		if waitRemoved(ctx, h.s, h.node) == nil {
			close(removed)
		}
	}()
	select {
	case <-h.s.Done():
		h.end(fmt.Errorf("%w: %w", ErrLost, h.s.Err()))
	case <-removed:
		h.end(fmt.Errorf("%w: %w: our node %s was deleted", ErrLost, ErrRevoked, h.node.Path))
	case <-ctx.Done():
	}
	h.stop()
}

// waitRemoved returns nil once that incarnation of n is gone. A failed
// watch is set again (it finds the node gone if it went meanwhile) until
// ctx ends or the session does.
func waitRemoved(ctx context.Context, s *Session, n backend.Node) error {
	backoff := 10 * time.Millisecond
	for {
		err := s.conn.WaitGone(ctx, n)
		if err == nil || ctx.Err() != nil || s.Err() != nil || IsSessionGone(err) {
			return errors.Join(err, ctx.Err(), s.Err())
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		backoff = min(2*backoff, time.Second)
	}
}

// free gives the node back. The lease ends first (as released, unless it
// was lost already), so Done closes before anyone else can take the lock;
// then the node is deleted on a context detached from ctx (a release always
// releases, even when ctx is done), bounded by the session TTL. The hold
// is over once the delete succeeded or the session is gone; otherwise free
// returns the delete's error and may be called again, and the delete goes
// on in the background until the node is gone or the session ends: a
// caller that drops the error must not leave the lock taken by a node
// nobody holds for as long as the session lives. After a loss it returns
// the lease's error.
func (h *nodeHold) free(ctx context.Context) (over bool, err error) {
	lost := h.lease.Err()
	h.end(ErrNotHeld)
	h.stop()
	<-h.quiet // our own delete is not a removal to report, nor to be told of
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.s.TTL())
	defer cancel()
	if err := h.s.conn.Delete(dctx, h.node); err != nil && h.s.Err() == nil && !IsSessionGone(err) {
		keepRemoving(ctx, h.s.conn, h.node)
		return false, fmt.Errorf("release %s (call again to retry): %w", h.node.Path, err)
	}
	if errors.Is(lost, ErrLost) {
		return true, lost
	}
	return true, nil
}

// nodeHeld is what one side of a node-holding handle holds, by level.
type nodeHeld = handle.Reentrant[*nodeHold, *Lease]

// reenter returns the live lease of r with its level raised, if any.
// Otherwise it first gives back a hold left over by a loss or a failed
// release, so that a new acquisition starts clean, and returns nil.
func reenter(ctx context.Context, r *nodeHeld) (*Lease, error) {
	if l := r.Again(); l != nil {
		return l, nil
	}
	if h, l, ok := r.Stale(); ok {
		if over, err := h.free(ctx); !over {
			return nil, err
		}
		r.Clear(l)
	}
	return nil, nil
}

// release gives back one level of r; the last one frees the node.
func release(ctx context.Context, r *nodeHeld) error {
	return r.Release(func(h *nodeHold) (bool, error) { return h.free(ctx) })
}
