package handle

import (
	"context"
	"errors"
	"sync"
)

// ErrNotHeld is the root package's ErrNotHeld: a release without a hold,
// and the cause of a lease its holder released.
var ErrNotHeld = errors.New("baton: not held")

// Lease is one acquisition of a lock-like recipe: it carries the fencing
// token of that acquisition and signals when the hold may have been lost.
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
}

// NewLease returns a live lease for key with the given fencing token, and
// the function that ends it with a cause (ErrNotHeld for a release, an
// error wrapping ErrLost for a loss). Only the first call of end counts.
func NewLease(key string, token int64) (*Lease, func(error)) {
	l := &Lease{key: key, token: token, done: make(chan struct{}), revoke: make(chan struct{})}
	return l, l.end
}

// NewMultiLease is NewLease for a lease that covers parts (a multi-lock's
// leases, in the order they were taken). The caller ends it when any part
// ends and when the parts are released.
func NewMultiLease(key string, token int64, parts []*Lease) (*Lease, func(error)) {
	l, end := NewLease(key, token)
	l.parts = append([]*Lease(nil), parts...)
	return l, end
}

func (l *Lease) end(err error) {
	l.once.Do(func() {
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
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
