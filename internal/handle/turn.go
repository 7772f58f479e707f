package handle

import (
	"context"
	"fmt"
)

// Turn is what makes a lock handle take turns like a sync.Mutex: the
// handle's own hold, taken by Lock before it goes to the store and given
// back by the Unlock that ends that hold, so that goroutines sharing the
// handle wait for each other. A Reentrant handle takes no turns: its
// levels count instead (Reentrant[H, L]). L is the lease type. The zero
// value takes turns.
type Turn[L comparable] struct {
	Reentrant bool

	own   Gate
	owner L // the lease the turn was taken for, guarded by the handle's gate
}

// Take runs acquire inside gate (the handle's one call at a time) and,
// unless Reentrant, inside the handle's turn: it first waits for the
// Unlock of the hold before, or with try fails at once with ErrLocked
// ("NAME is held by this HANDLE"). A failed acquisition gives the turn
// back.
func (t *Turn[L]) Take(ctx context.Context, try bool, name, handle string, gate *Gate, acquire func() (L, error)) (L, error) {
	var none L
	if !t.Reentrant {
		if err := t.enter(ctx, try, name, handle); err != nil {
			return none, err
		}
	}
	if err := gate.Enter(ctx); err != nil {
		if !t.Reentrant {
			t.own.Leave()
		}
		return none, err
	}
	defer gate.Leave()
	l, err := acquire()
	switch {
	case t.Reentrant:
	case err != nil:
		t.own.Leave()
	default:
		t.owner = l
	}
	return l, err
}

func (t *Turn[L]) enter(ctx context.Context, try bool, name, handle string) error {
	if !try {
		return t.own.Enter(ctx)
	}
	if !t.own.TryEnter() {
		return fmt.Errorf("%w: %s is held by this %s", ErrLocked, name, handle)
	}
	return nil
}

// Release gives the turn back if it was taken for l: the Unlock that ends
// the hold of l calls it (inside the gate), even when giving the hold back
// on the store failed, so that the handle is free for its next Lock (which
// retries what was left).
func (t *Turn[L]) Release(l L) {
	var none L
	if t.Reentrant || l == none || l != t.owner {
		return
	}
	t.owner = none
	t.own.Leave()
}
