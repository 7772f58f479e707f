package baton

import "context"

// Locker is the one contract of baton's locks: a Mutex, an RWMutex (its
// write side; RLocker gives its read side), a MultiLock, and the redis
// package's Mutex and Redlock. The command line, the bench and MultiLock
// consume nothing else.
//
// A Locker value is one holder. Lock waits in line as long as ctx allows
// and returns the Lease of the acquisition; if ctx ends first nothing is
// left held and ctx.Err() is returned. A second Lock on a value that
// holds does what its type says: a Mutex waits for Unlock, as a
// sync.Mutex does, unless made Reentrant; an RWMutex, redis.Mutex and
// redis.Redlock count levels; a MultiLock returns ErrLocked. TryLock never waits for another
// holder: it returns an error wrapping ErrLocked when the lock is taken.
// Unlock releases the hold even when ctx is already done, and returns
// ErrNotHeld without one, or an error wrapping ErrLost after a loss.
type Locker interface {
	Lock(ctx context.Context) (*Lease, error)
	TryLock(ctx context.Context) (*Lease, error)
	Unlock(ctx context.Context) error
}

var (
	_ Locker = (*Mutex)(nil)
	_ Locker = (*RWMutex)(nil)
	_ Locker = (*MultiLock)(nil)
	_ Locker = rLocker{}
)

// RLocker returns the read side of rw as a Locker: its Lock is RLock, its
// TryLock TryRLock and its Unlock RUnlock, as sync.RWMutex.RLocker does.
// The Locker's Name is rw's, so a MultiLock orders it by that name.
func (rw *RWMutex) RLocker() Locker { return rLocker{rw} }

// rLocker is an RWMutex's read side.
type rLocker struct{ rw *RWMutex }

func (r rLocker) Lock(ctx context.Context) (*Lease, error)    { return r.rw.RLock(ctx) }
func (r rLocker) TryLock(ctx context.Context) (*Lease, error) { return r.rw.TryRLock(ctx) }
func (r rLocker) Unlock(ctx context.Context) error            { return r.rw.RUnlock(ctx) }

// Name is the lock's name, by which a MultiLock orders its parts.
func (r rLocker) Name() string { return r.rw.Name() }
