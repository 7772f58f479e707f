package bench

import (
	"context"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/store"
)

// StoreFactory opens baton's clients, each a store of its own (a session,
// or Redis clients) as the command line opens one; the lock is the
// store's plain lock (store.Store.Mutex), used through baton.Locker only.
type StoreFactory func(ctx context.Context) (*store.Store, error)

// Open opens one store.
func (f StoreFactory) Open(ctx context.Context) (Client, error) {
	s, err := f(ctx)
	if err != nil {
		return nil, err
	}
	return clientOf(s), nil
}

// SessionFactory opens baton sessions made elsewhere (the in-process
// memory store), each as a store of its own.
type SessionFactory func(ctx context.Context) (*baton.Session, error)

// Open opens one session.
func (f SessionFactory) Open(ctx context.Context) (Client, error) {
	s, err := f(ctx)
	if err != nil {
		return nil, err
	}
	return clientOf(store.OnSession(store.URL{Scheme: store.Memory}, s)), nil
}

// clientOf is s as a bench client. A store with a session also has the
// session's capabilities: its watch notification count and a lock's
// contenders (Redis keeps neither).
func clientOf(s *store.Store) Client {
	if s.Session == nil {
		return storeClient{s}
	}
	return sessionClient{storeClient{s}}
}

// storeClient is one store; its handles are baton.Lockers.
type storeClient struct{ s *store.Store }

func (c storeClient) Locker(name string) Locker       { return batonLocker{c.s.Mutex(name)} }
func (c storeClient) Close(ctx context.Context) error { return c.s.Close(ctx) }

// sessionClient is a store with a session.
type sessionClient struct{ storeClient }

var (
	_ WatchCounter = sessionClient{}
	_ Contenders   = sessionClient{}
)

// WatchEvents is the session's notification count, 0 when the backend
// does not count.
func (c sessionClient) WatchEvents() int64 {
	if w, ok := c.s.Session.Conn().(backend.WatchCounter); ok {
		return w.WatchEvents()
	}
	return 0
}

func (c sessionClient) Contenders(ctx context.Context, name string) (int, error) {
	kids, err := c.s.Session.Conn().Children(ctx, name)
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

// batonLocker is a baton.Locker as the workloads take it: the lease is
// not needed.
type batonLocker struct{ l baton.Locker }

func (b batonLocker) Lock(ctx context.Context) error {
	_, err := b.l.Lock(ctx)
	return err
}

func (b batonLocker) Unlock(ctx context.Context) error { return b.l.Unlock(ctx) }
