package bench

import (
	"context"
	"errors"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// SessionFactory opens baton sessions: baton.Mutex is the lock.
type SessionFactory func(ctx context.Context) (*baton.Session, error)

// Open opens one session.
func (f SessionFactory) Open(ctx context.Context) (Client, error) {
	s, err := f(ctx)
	if err != nil {
		return nil, err
	}
	return sessionClient{s}, nil
}

type sessionClient struct{ s *baton.Session }

var (
	_ WatchCounter = sessionClient{}
	_ Contenders   = sessionClient{}
)

func (c sessionClient) Locker(name string) Locker       { return &mutexLocker{m: baton.NewMutex(c.s, name)} }
func (c sessionClient) Close(ctx context.Context) error { return c.s.Close(ctx) }

// WatchEvents is the session's notification count, 0 when the backend
// does not count.
func (c sessionClient) WatchEvents() int64 {
	if w, ok := c.s.Conn().(backend.WatchCounter); ok {
		return w.WatchEvents()
	}
	return 0
}

func (c sessionClient) Contenders(ctx context.Context, name string) (int, error) {
	kids, err := c.s.Conn().Children(ctx, name)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range kids {
		if k.Kind == backend.KindLock {
			n++
		}
	}
	return n, nil
}

type mutexLocker struct{ m *baton.Mutex }

func (l *mutexLocker) Lock(ctx context.Context) error {
	_, err := l.m.Lock(ctx)
	return err
}

func (l *mutexLocker) Unlock(ctx context.Context) error { return l.m.Unlock(ctx) }

// LeaseHandle is the handle of a session-less lock (redis.Mutex,
// redis.Redlock).
type LeaseHandle interface {
	Lock(ctx context.Context) (*baton.Lease, error)
	Unlock(ctx context.Context) error
}

// LeaseLock returns the handle of the lock named name. A locker makes its
// handle once and takes it for every cycle, as a program holds a lock
// handle (and as the peers' lockers hold theirs).
type LeaseLock func(name string) LeaseHandle

// LeaseFactory opens clients of a session-less lock (Redis, Redlock).
type LeaseFactory struct {
	// Dial opens one client (its own connections) and returns its lock
	// function and its close function.
	Dial func(ctx context.Context) (LeaseLock, func() error, error)
}

// Open dials one client.
func (f LeaseFactory) Open(ctx context.Context) (Client, error) {
	lock, closeFn, err := f.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return &leaseClient{lock: lock, close: closeFn}, nil
}

type leaseClient struct {
	lock  LeaseLock
	close func() error
}

func (c *leaseClient) Locker(name string) Locker   { return &leaseLocker{h: c.lock(name)} }
func (c *leaseClient) Close(context.Context) error { return c.close() }

type leaseLocker struct {
	h    LeaseHandle
	held bool
}

func (l *leaseLocker) Lock(ctx context.Context) error {
	if _, err := l.h.Lock(ctx); err != nil {
		return err
	}
	l.held = true
	return nil
}

func (l *leaseLocker) Unlock(ctx context.Context) error {
	if !l.held {
		return errors.New("bench: unlock without lock")
	}
	l.held = false
	return l.h.Unlock(ctx)
}
