package baton

import (
	"context"
	"time"

	"github.com/batonhq/baton/internal/handle"
)

// Lease is one acquisition of a lock: of a Mutex, either side of an
// RWMutex, a Semaphore, an Election, a MultiLock, or a lock of package
// redis. It carries the fencing token of that acquisition and says when
// the hold may have been lost.
//
// A process can be paused at any moment (a GC pause, SIGSTOP, a stalled
// VM) for longer than the TTL; while it is paused nothing can tell it that
// it lost the lock, and Done closes only after it resumes. So check Valid,
// or pass the fencing token to the resource you protect, immediately
// before each side effect, not only once when the lease was taken: a Done
// channel read in a select loop answers too late after a pause.
type Lease handle.Lease

// inner is l as the plumbing in internal/handle keeps it.
func (l *Lease) inner() *handle.Lease { return (*handle.Lease)(l) }

// leaseOf is the Lease of a hold the plumbing made.
func leaseOf(h *handle.Lease) *Lease { return (*Lease)(h) }

// Key is the lock's name on the store, as the recipe was made with it.
func (l *Lease) Key() string { return l.inner().Key() }

// Token is the fencing token of this acquisition: strictly greater than the
// token of every earlier acquisition of the same lock (the lock node's
// czxid on ZooKeeper, its key's CreateRevision on etcd, a counter drawn
// with the grant on Redis). Pass it to the resource you protect and have
// it reject writes with a lower token. It is 0 for a lock that has no
// fencing token: redis.Redlock.
func (l *Lease) Token() int64 { return l.inner().Token() }

// Tokens returns the fencing token of every lock the lease covers: one per
// part of a MultiLock's lease, in the order they were taken, else Token.
func (l *Lease) Tokens() []int64 { return l.inner().Tokens() }

// Parts returns the leases a MultiLock's lease covers, in the order they
// were taken; nil for the lease of a single lock.
func (l *Lease) Parts() []*Lease {
	ps := l.inner().Parts()
	if ps == nil {
		return nil
	}
	out := make([]*Lease, len(ps))
	for i, p := range ps {
		out[i] = leaseOf(p)
	}
	return out
}

// Done is closed when the lease ends: released by its holder (Err is then
// ErrNotHeld) or lost (Err wraps ErrLost: with the session's error when the
// session ended, with ErrRevoked when someone else removed our node). It
// is closed no later than the moment another client could take the same
// lock, so work guarded by the lease should stop when Done closes.
func (l *Lease) Done() <-chan struct{} { return l.inner().Done() }

// Err is nil while the lease is held, ErrNotHeld after a release, and an
// error wrapping ErrLost after a loss.
func (l *Lease) Err() error { return l.inner().Err() }

// Context returns a copy of parent that is cancelled when the lease ends,
// with the lease's error as its cause.
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return l.inner().Context(parent)
}

// RevokeRequested is closed when someone asks the holder to let go: the
// revoke marker was written into the node of a Revocable Mutex (by Revoke,
// or Curator's Revoker), or of a part of a MultiLock. Revocation is
// cooperative: the lease stays held until its holder releases it. For a
// lease nobody can revoke it never closes.
func (l *Lease) RevokeRequested() <-chan struct{} { return l.inner().RevokeRequested() }

// Deadline is the loss deadline, on the monotonic clock: the last
// confirmed contact with the store plus the TTL minus the backend's safety
// margin (the session's on ZooKeeper, etcd and memory; the lock's validity
// on Redis; the earliest part's for a MultiLock). No other client can take
// the lock before it. It moves forward with every confirmed renewal, and
// is the zero Time once the lease has ended.
func (l *Lease) Deadline() time.Time { return l.inner().Deadline() }

// Valid reports whether the lease is held right now: Err is nil and
// Deadline has not passed. It reads the clock, so it is right the moment a
// paused process resumes, before the loss is noticed and Done closes.
func (l *Lease) Valid() bool { return l.inner().Valid() }

// Jeopardy is closed when no contact with the store has been confirmed
// until a grace before Deadline (the smaller of 1 s and a fifth of the
// TTL), and at the latest when Done closes: time to checkpoint or hand work
// back while the lease still holds. It stays closed if contact comes back
// (Valid then says the lease still holds).
func (l *Lease) Jeopardy() <-chan struct{} { return l.inner().Jeopardy() }
