package baton

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/backend"
)

// MutexOption configures a Mutex.
type MutexOption func(*Mutex)

// LockDelay makes a lock whose holder's session ended without releasing it
// (expired, cut off, crashed) stay unavailable for d after the next
// contender finds it free, as Chubby's and Consul's lock-delay do: a
// holder cut off in the middle of a write gets d to notice and stop before
// anyone else can act. A lock released by Unlock is not delayed. It is off
// by default (d = 0).
//
// The trade-off: after every unclean end of a hold the lock is idle for d
// even when the old holder is long dead, so d bounds the availability lost
// per crash; it is a mitigation for holders that ignore Lease.Done, not a
// substitute for fencing tokens. Every client of a lock must use the same
// option: a Mutex without it neither writes nor obeys the marker.
//
// The holder records its hold in a persistent marker node NAME/_lockdelay
// (written, guarded by its lock node, before Lock returns; deleted,
// guarded likewise, by Unlock before the lock node). A contender that wins
// the lock and finds a marker waits d on its own clock, counted from the
// moment it found the lock free, which is after the store ended the old
// session: no clock is compared across clients. TryLock waits out the
// delay too (it never waits for a live holder).
func LockDelay(d time.Duration) MutexOption {
	return func(m *Mutex) { m.delay = d }
}

// lockDelayName is the marker node's name under the lock. It holds no
// "lock-" and no "__lock__", so Curator's and kazoo's locks ignore it.
const lockDelayName = "_lockdelay"

// markHold waits out the lock-delay if the last hold ended uncleanly, then
// records our hold, guarded by our node me. On failure our node is
// removed (in the background if the store cannot be reached now).
func (m *Mutex) markHold(ctx context.Context, me backend.Node) error {
	c := m.s.conn
	err := func() error {
		_, old, err := c.Get(ctx, backend.Join(m.name, lockDelayName))
		op := backend.Op{Kind: backend.OpCreate, Dir: m.name, Name: lockDelayName, Data: []byte(me.Path)}
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return err
		default:
			t := time.NewTimer(m.delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			case <-m.s.Done():
				return m.s.Err()
			}
			op = backend.Op{Kind: backend.OpSet, Node: old, Data: []byte(me.Path)}
		}
		if err := c.Commit(ctx, me, op); err != nil {
			return fmt.Errorf("lock-delay marker: %w", err)
		}
		return nil
	}()
	if err != nil {
		// Our node heads the line: left there, it would stall every
		// waiter for the session's life, so keep trying to remove it.
		removeNode(ctx, c, me)
	}
	return err
}

// unmarkHold deletes the marker, guarded by our node: the hold ends
// cleanly. A failure only means the next holder waits the delay.
func (m *Mutex) unmarkHold(ctx context.Context, me backend.Node) {
	c := m.s.conn
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, mark, err := c.Get(dctx, backend.Join(m.name, lockDelayName))
	if err != nil {
		return
	}
	_ = c.Commit(dctx, me, backend.Op{Kind: backend.OpDelete, Node: mark})
}
