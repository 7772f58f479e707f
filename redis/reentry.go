package redis

import (
	"context"
	"sync"
	"time"

	"github.com/batonhq/baton"
)

// reentry is the re-entrant hold of one lock handle, shared by Mutex and
// Redlock: one call at a time (turn), the levels held, and the hold.
type reentry struct {
	turn chan struct{} // make(chan struct{}, 1)

	mu    sync.Mutex // guards count and h
	count int
	h     *hold
}

// enter takes this handle's turn (one call at a time), preferring it to
// an already cancelled ctx.
func (e *reentry) enter(ctx context.Context) error {
	select {
	case e.turn <- struct{}{}:
		return nil
	default:
	}
	select {
	case e.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave gives the turn back.
func (e *reentry) leave() { <-e.turn }

// again raises the count and returns the lease if the handle holds a live
// lease already, else nil.
func (e *reentry) again() *baton.Lease {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.count > 0 && e.h.lease.Err() == nil {
		e.count++
		return e.h.lease
	}
	return nil
}

// hold records a new acquisition and returns its lease.
func (e *reentry) take(h *hold) *baton.Lease {
	e.mu.Lock()
	e.h, e.count = h, 1
	e.mu.Unlock()
	return h.lease
}

// drop releases one level. It returns the hold when that was the last one
// (the caller then releases it on the servers), nil while levels remain,
// and baton.ErrNotHeld without a hold.
func (e *reentry) drop() (*hold, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.count == 0 {
		return nil, baton.ErrNotHeld
	}
	e.count--
	if e.count > 0 {
		return nil, nil
	}
	h := e.h
	e.h = nil
	return h, nil
}

// live reports whether the handle holds a live lease.
func (e *reentry) live() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.count > 0 && e.h.lease.Err() == nil
}

// expiry is the live hold's loss deadline, or the zero Time.
func (e *reentry) expiry() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.count == 0 {
		return time.Time{}
	}
	return e.h.expiryTime()
}
