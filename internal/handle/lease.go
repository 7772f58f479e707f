package handle

import (
	"context"
	"sync"
	"time"
)

// Lease is one acquisition of a lock-like recipe: it carries the fencing
// token of that acquisition and signals when the hold may have been lost.
//
// Jeopardy closes when no contact with the store has been confirmed until
// the grace before the loss deadline, and no later than Done. Deadline and
// Valid answer synchronously from the clock, so a process that was paused
// (GC, SIGSTOP, a stalled VM) and resumes knows at once, before Done
// closes, that it may no longer hold the lock: check Valid, or pass the
// fencing token to the resource, before each side effect.
//
// Done is closed when the lease ends: released by its holder (Err is then
// ErrNotHeld) or lost (Err wraps ErrLost, and the session error when the
// session ended, or ErrRevoked when its node was removed by someone else).
// It is closed no later than the moment another client could acquire the
// same lock, so work guarded by the lease should stop when Done closes.
type Lease struct {
	key   string
	token int64
	parts []*Lease // the leases a multi-lock's lease covers, in lock order

	once sync.Once
	done chan struct{}
	mu   sync.Mutex
	err  error

	revokeOnce sync.Once
	revoke     chan struct{} // closed when the holder is asked to let go

	// deadline is the hold's loss deadline as its backend keeps it (nil:
	// the hold has none); grace is how long before it Jeopardy closes.
	deadline func() time.Time
	grace    time.Duration

	jeopardyOnce sync.Once     // closes jeopardy
	jeopardy     chan struct{} // closed when the deadline is within grace, or at the end
	armOnce      sync.Once     // starts watching the deadline, at the first Jeopardy call
	timer        *time.Timer   // guarded by mu; nil once stopped
}

// DefaultGrace is how long before a hold's loss deadline its lease says it
// is in jeopardy: the smaller of 1 s and a fifth of ttl.
func DefaultGrace(ttl time.Duration) time.Duration { return min(time.Second, ttl/5) }

// NewLease returns a live lease for key with the given fencing token, and
// the function that ends it with a cause (ErrNotHeld for a release, an
// error wrapping ErrLost for a loss). Only the first call of end counts.
func NewLease(key string, token int64) (*Lease, func(error)) {
	l := &Lease{key: key, token: token, done: make(chan struct{}), revoke: make(chan struct{}), jeopardy: make(chan struct{})}
	return l, l.end
}

// SetDeadline gives l its loss deadline: deadline reports the moment the
// hold will be given up unless contact with the store is confirmed before
// (baton.Expirer of the session or the lock), the zero Time once lost;
// Jeopardy closes grace before it. The recipe calls it once, before it
// hands the lease out. (A function, not a method: baton.Lease users do not
// see it.)
func SetDeadline(l *Lease, deadline func() time.Time, grace time.Duration) {
	l.deadline, l.grace = deadline, grace
}

// NewMultiLease is NewLease for a lease that covers parts (a multi-lock's
// leases, in the order they were taken). The caller ends it when any part
// ends and when the parts are released.
func NewMultiLease(key string, token int64, parts []*Lease) (*Lease, func(error)) {
	l, end := NewLease(key, token)
	l.parts = append([]*Lease(nil), parts...)
	var timed []*Lease
	for _, p := range parts {
		if p.deadline != nil {
			timed = append(timed, p)
			l.grace = max(l.grace, p.grace)
		}
	}
	if len(timed) > 0 {
		// The earliest part's: the multi-lock is lost when any part is.
		l.deadline = func() time.Time {
			var first time.Time
			for i, p := range timed {
				d := p.Deadline()
				if d.IsZero() {
					return time.Time{}
				}
				if i == 0 || d.Before(first) {
					first = d
				}
			}
			return first
		}
	}
	return l, end
}

func (l *Lease) end(err error) {
	l.once.Do(func() {
		l.mu.Lock()
		l.err = err
		if l.timer != nil {
			l.timer.Stop()
			l.timer = nil
		}
		l.mu.Unlock()
		l.jeopardyOnce.Do(func() { close(l.jeopardy) })
		close(l.done)
	})
}

// RevokeRequested is closed when someone asks the holder to let go: the
// revoke marker was written into the node of a revocable lock (Curator's
// revocation protocol). Revocation is cooperative: the lease stays held
// until its holder releases it. For a lease nobody can revoke it never
// closes.
func (l *Lease) RevokeRequested() <-chan struct{} { return l.revoke }

// RequestRevoke closes RevokeRequested, once.
func (l *Lease) RequestRevoke() { l.revokeOnce.Do(func() { close(l.revoke) }) }

// Key is the lock's name on the store: the name the recipe was made with
// (a ZooKeeper path, an etcd prefix, a Redis key).
func (l *Lease) Key() string { return l.key }

// Token is the fencing token of this acquisition: strictly greater than the
// token of every earlier acquisition of the same lock. Pass it to the
// resource you protect and have it reject writes with a lower token.
func (l *Lease) Token() int64 { return l.token }

// Parts returns the leases a multi-lock's lease covers, in the order they
// were taken; nil for the lease of a single lock.
func (l *Lease) Parts() []*Lease { return append([]*Lease(nil), l.parts...) }

// Tokens returns the fencing token of every lock the lease covers: one per
// part of a multi-lock's lease, in the order they were taken, else Token.
func (l *Lease) Tokens() []int64 {
	if l.parts == nil {
		return []int64{l.token}
	}
	out := make([]int64, len(l.parts))
	for i, p := range l.parts {
		out[i] = p.token
	}
	return out
}

// Done is closed when the lease is released or lost.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err is nil while the lease is held, ErrNotHeld after a release, and an
// error wrapping ErrLost after a loss.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Deadline is the moment the hold will be given up as lost unless contact
// with the store is confirmed before: the last confirmed contact plus the
// TTL minus the backend's safety margin, on the monotonic clock. It is never
// later than the moment another client could take the lock. It is the zero
// Time once the lease has ended, and for a lease made without a deadline
// (SetDeadline).
func (l *Lease) Deadline() time.Time {
	if l.deadline == nil || l.Err() != nil {
		return time.Time{}
	}
	return l.deadline()
}

// Valid reports whether the lease is held right now: it has not ended and
// its deadline, if it has one, has not passed. It reads the clock, so it is
// right even in a process that was paused and has just resumed, before the
// loss is noticed and Done closes.
func (l *Lease) Valid() bool {
	if l.Err() != nil {
		return false
	}
	if l.deadline == nil {
		return true
	}
	return time.Now().Before(l.deadline())
}

// Jeopardy is closed when the hold is in danger: its deadline came within
// the grace (DefaultGrace of the TTL) without contact with the store
// confirmed, and at the latest when Done closes. It stays closed even if
// contact comes back in time (Valid then says the lease is still held).
// For a hold without a deadline it closes with Done.
func (l *Lease) Jeopardy() <-chan struct{} {
	if l.deadline != nil {
		l.armOnce.Do(l.watchDeadline)
	}
	return l.jeopardy
}

// watchDeadline closes jeopardy once the deadline is within the grace,
// looking again whenever a renewal moved it.
func (l *Lease) watchDeadline() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.timer = time.AfterFunc(0, l.checkJeopardy)
}

func (l *Lease) checkJeopardy() {
	if l.Err() != nil {
		return
	}
	d := l.deadline() // not under mu: it may take the backend's locks
	left := time.Until(d) - l.grace
	if !d.IsZero() && left > 0 {
		l.mu.Lock()
		if l.timer != nil {
			l.timer.Reset(left)
		}
		l.mu.Unlock()
		return
	}
	l.jeopardyOnce.Do(func() { close(l.jeopardy) })
}

// Context returns a copy of parent that is cancelled when the lease ends,
// with the lease's error as its cause.
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-l.done:
			cancel(l.Err())
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}
