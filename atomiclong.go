package baton

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/codec"
)

// AtomicLong is a 64-bit counter in Apache Curator's DistributedAtomicLong
// layout: the persistent node NAME holds the value as an 8-byte big-endian
// long (on etcd, the key NAME); a missing node is 0, and the first write
// makes it. Add and Set are optimistic: read the value and its version,
// then write only if the version is unchanged, again on a conflict, up to
// a bound of tries. When those tries run out, the update is tried again
// while holding a Mutex on the promoted lock (Curator's PromotedToLock),
// NAME.lock unless PromotedToLock names another, so that contenders take
// turns instead of colliding: contention alone never fails an update.
// Curator's DistributedAtomicLong on the same path reads what baton
// writes and the other way round; give it the same lock path
// (PromotedToLock.builder().lockPath(NAME + ".lock")) if it is to take
// turns with baton.
type AtomicLong struct {
	node  counterNode
	lock  string // the promoted lock's name; "" none
	tries int
}

// lockSuffix names an AtomicLong's promoted lock by default, beside its
// node: NAME.lock.
const lockSuffix = ".lock"

// AtomicLongOption configures an AtomicLong.
type AtomicLongOption func(*AtomicLong)

// PromotedToLock makes an update whose optimistic tries all conflicted
// try again under a Mutex on lockName (Curator's PromotedToLock lockPath)
// instead of NAME.lock. An empty lockName turns the promotion off: an
// update whose tries all conflicted then fails with ErrConflict.
func PromotedToLock(lockName string) AtomicLongOption {
	return func(a *AtomicLong) { a.lock = lockName }
}

// OptimisticTries bounds the optimistic tries of one update (default 10;
// at least 1).
func OptimisticTries(n int) AtomicLongOption {
	return func(a *AtomicLong) { a.tries = max(n, 1) }
}

// NewAtomicLong returns the atomic long NAME. It does no I/O.
func NewAtomicLong(s *Session, name string, opts ...AtomicLongOption) *AtomicLong {
	a := &AtomicLong{node: newCounterNode(s, name), tries: maxCounterTries}
	a.lock = a.node.name + lockSuffix
	for _, o := range opts {
		o(a)
	}
	return a
}

// LockName is the promoted lock's name, or "" if there is none.
func (a *AtomicLong) LockName() string { return a.lock }

// Name is the counter's node.
func (a *AtomicLong) Name() string { return a.node.name }

// Get reads the value (0 if the node is missing).
func (a *AtomicLong) Get(ctx context.Context) (int64, error) {
	data, _, _, err := a.node.read(ctx, nil)
	if err != nil {
		return 0, err
	}
	return codec.ParseLong(data)
}

// Add adds delta and returns the value before and after. With the
// promoted lock (the default) it fails only for a reason other than
// contention (ctx, the session, the store); holding the lock it tries
// again until it writes, for every writer that beats it there has made
// its own update. Without the lock (PromotedToLock("")) it fails with an
// error wrapping ErrConflict when every try collided with another writer.
func (a *AtomicLong) Add(ctx context.Context, delta int64) (pre, post int64, err error) {
	return a.update(ctx, func(v int64) int64 { return v + delta })
}

// Set sets the value and returns the value before, as Add does.
func (a *AtomicLong) Set(ctx context.Context, v int64) (pre int64, err error) {
	pre, _, err = a.update(ctx, func(int64) int64 { return v })
	return pre, err
}

func (a *AtomicLong) update(ctx context.Context, f func(int64) int64) (pre, post int64, err error) {
	pre, post, err = a.tryN(ctx, f, false)
	if !errors.Is(err, ErrConflict) || a.lock == "" {
		return pre, post, err
	}
	m := NewMutex(a.node.s, a.lock)
	if _, err := m.Lock(ctx); err != nil {
		return 0, 0, err
	}
	defer func() { _ = m.Unlock(context.WithoutCancel(ctx)) }()
	return a.tryN(ctx, f, true)
}

// tryN makes up to a.tries optimistic tries, or, with the promoted lock
// held (locked), tries until one writes or ctx ends: a writer that has
// not come to the lock may still beat us there, but each of those has
// made its update and gone, so this ends. Holding the lock, a node at
// ZooKeeper's version -1, which no write can be conditioned on, is
// written unconditioned (every baton writer that reads -1 comes to the
// lock, and a write conditioned on another version fails there).
func (a *AtomicLong) tryN(ctx context.Context, f func(int64) int64, locked bool) (pre, post int64, err error) {
	for try := 0; locked || try < a.tries; try++ {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		data, n, ok, err := a.node.read(ctx, nil)
		if err != nil {
			return 0, 0, err
		}
		if pre, err = codec.ParseLong(data); err != nil {
			return 0, 0, err
		}
		post = f(pre)
		if !ok {
			dir, base, err := splitName(a.node.name)
			if err != nil {
				return 0, 0, err
			}
			_, err = a.node.s.conn.Create(ctx, dir, base, codec.LongBytes(post), 0)
			if err == nil {
				return pre, post, nil
			}
			if !errors.Is(err, ErrExists) {
				return 0, 0, err
			}
			continue
		}
		err = a.node.set(ctx, n, codec.LongBytes(post), !locked || n.Version != -1)
		if err == nil {
			return pre, post, nil
		}
		if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
			return 0, 0, err
		}
	}
	return 0, 0, fmt.Errorf("%w: %s: %d tries collided", ErrConflict, a.node.name, a.tries)
}
