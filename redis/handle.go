package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/handle"
)

// lockHandle is the handle Mutex and Redlock share, written once: the
// lock's keys and options, one call at a time through the gate, what the
// handle holds by re-entrant level, and the telemetry of its
// acquisitions. A handle takes turns like a sync.Mutex unless made
// Reentrant. How a hold is taken and given back on the servers (one
// server, or a quorum of masters) is the algorithm's.
type lockHandle struct {
	k        keys
	ttl      time.Duration
	ident    *baton.Identity // WithIdentity's, or nil
	replicas int             // WithReplicas's: replicas that acknowledge each write
	obs      *observer       // nil: no telemetry
	bad      error           // why the name or ttl cannot lock, or nil
	algo     algorithm

	gate   handle.Gate                               // one call at a time on this handle
	levels handle.Reentrant[*liveLock, *baton.Lease] // what this handle holds, by level
	turn   handle.Turn[*baton.Lease]                 // takes turns like a sync.Mutex unless Reentrant
}

// algorithm takes and gives back a lock's holds on its servers.
type algorithm interface {
	// take acquires the lock with a new value: once if try, else waiting
	// in line for as long as ctx allows. On failure nothing of it is left
	// held or in line.
	take(ctx context.Context, value string, try bool) (*liveLock, error)
	// giveBack releases h on the servers, even when ctx is already done
	// (bounded), and hands the lock on. h's renewal has stopped; lost is
	// the error its lease had ended with by then, or nil.
	giveBack(ctx context.Context, h *liveLock, lost error) error
}

// init makes h the handle of the lock named name, by algo, reported to
// telemetry as backend. The name is cleaned here, once: it is the key as
// written (KeyOf), and a name or ttl that cannot lock fails every call.
func (h *lockHandle) init(backend, name string, opts []Option, algo algorithm) {
	o := buildOptions(opts)
	h.k, h.ttl, h.ident, h.algo, h.replicas = keysFor(name), o.ttl, o.ident, algo, o.replicas
	h.turn.Reentrant = o.reentrant
	h.obs = newObserver(backend, name, o)
	switch _, err := baton.CleanName(name); {
	case err != nil:
		h.bad = err
	case o.replicas < 0:
		h.bad = fmt.Errorf("redis lock %s: WithReplicas(%d): want 0 or more", name, o.replicas)
	case o.replicas > 0 && backend != "redis":
		h.bad = fmt.Errorf("redis lock %s: WithReplicas applies to a Mutex on one master, not to a %s", name, backend)
	default:
		h.bad = checkTTL(name, o.ttl)
	}
}

// Key is the lock's Redis key: its name as written (KeyOf).
func (h *lockHandle) Key() string { return h.k.lock }

// Held reports whether this handle holds the lock (its lease is live).
func (h *lockHandle) Held() bool { return h.levels.Live() }

// Expiry is when the hold will be given up as lost unless a renewal is
// confirmed before (baton.Expirer): the send time of the last confirmed
// acquisition or extension (on a majority of the masters, for a Redlock)
// plus the TTL minus the safety margin. It is the zero Time when the
// handle holds nothing.
func (h *lockHandle) Expiry() time.Time {
	l, _, ok := h.levels.Current()
	if !ok {
		return time.Time{}
	}
	return l.expiryTime()
}

// Lock acquires the lock, waiting in line for as long as ctx allows. The
// lease carries the fencing token (always 0 on a Redlock, which has
// none) and ends (Done closes, Err wraps baton.ErrLost) as soon as a
// renewal cannot be confirmed before the validity last confirmed runs
// out, that is before the key can expire on the server (on a majority of
// the masters). On a handle that holds the lock (or whose lost hold was
// not yet given back by Unlock), Lock waits for its Unlock, as on a
// sync.Mutex; made Reentrant, it returns the lease one level up.
//
// If ctx ends first, our place in line is given up and ctx.Err() returned;
// when the restart guard was holding the lock back (see
// Client.RestartGuard and Quorum.RestartGuard), the error wraps
// ErrRestartGuard too and says so.
func (h *lockHandle) Lock(ctx context.Context) (*baton.Lease, error) {
	return h.obs.acquire(ctx, false, h.acquire, &h.levels)
}

// TryLock makes one attempt: it acquires the lock only if it is free, and
// returns an error wrapping baton.ErrLocked otherwise (on a Redlock, also
// when the votes split). While baton clients wait, a baton holder hands
// the lock over at release, so it is never free. On a handle that holds
// the lock it returns baton.ErrLocked too, unless made Reentrant (then
// the lease one level up). On a Redlock, it fails with an error wrapping
// ErrNoQuorum when too few masters answer.
func (h *lockHandle) TryLock(ctx context.Context) (*baton.Lease, error) {
	return h.obs.acquire(ctx, true, h.acquire, &h.levels)
}

// acquire takes a new hold in the handle's turn (Reentrant: raises the
// level of a live hold instead).
func (h *lockHandle) acquire(ctx context.Context, try bool) (*baton.Lease, error) {
	if h.bad != nil {
		return nil, h.bad
	}
	return h.turn.Take(ctx, try, h.k.lock, "handle", &h.gate, func() (*baton.Lease, error) { return h.take(ctx, try) })
}

// take is acquire's turn on the servers, inside the gate.
func (h *lockHandle) take(ctx context.Context, try bool) (*baton.Lease, error) {
	if l := h.levels.Again(); l != nil {
		return l, nil
	}
	l, err := h.algo.take(ctx, newValue(h.ident, h.ttl), try)
	if err != nil {
		return nil, err
	}
	return h.levels.Take(l, l.lease), nil
}

// Unlock releases the hold (made Reentrant, one level of it; the last
// level releases), and the next Lock on this handle may go. Releasing
// deletes the key (on every master, for a Redlock) where it still holds
// our value, hands it to the next waiter in line there, and ends the
// lease. Unlock without a hold returns baton.ErrNotHeld; after a loss, an
// error wrapping baton.ErrLost. The release is sent even if ctx is already
// cancelled (bounded by a couple of seconds).
func (h *lockHandle) Unlock(ctx context.Context) error {
	if err := h.gate.Enter(ctx); err != nil {
		return err
	}
	defer h.gate.Leave()
	return h.levels.Release(func(l *liveLock) (bool, error) {
		defer h.turn.Release(l.lease)
		l.stopRenewal()
		lost := l.lease.Err()
		err := h.algo.giveBack(ctx, l, lost)
		l.end(baton.ErrNotHeld)
		l.wait()
		if lost != nil {
			return true, lost
		}
		return true, err
	})
}
