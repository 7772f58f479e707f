package store

import (
	"context"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/redis"
)

// Store is an open store. It hands out the locks a command asks for
// (Locker) on any kind of store; a store with sessions (ZooKeeper, etcd)
// also has the Session every other recipe is made on. Open is the one
// place that knows the kind: nothing that holds a Store asks for it.
type Store struct {
	URL URL
	// Session is the store's session on ZooKeeper and etcd, on which
	// every recipe is made; nil on the Redis kinds, which make locks only
	// (Options.Recipe refuses them a recipe before anything is dialled).
	Session *baton.Session

	kind   kind
	opts   Options      // what it was opened with
	closer func() error // closes a client the session does not own
}

// kind is what one kind of store does for a Store.
type kind interface {
	// mutex makes the plain lock on name.
	mutex(name string) baton.Locker
	// locker makes the lock on name that spec asks for.
	locker(name string, spec LockSpec) (baton.Locker, error)
	// withIdentity is the kind whose holds write id into the store.
	withIdentity(id baton.Identity) kind
	// session is the kind's session, or nil.
	session() *baton.Session
	// ttl is the TTL the store granted: the session's, or each lock's.
	ttl() time.Duration
	// restartGuard is the error of a restart guard holding locks back,
	// or nil.
	restartGuard() error
	// glance is Store.Glance on s, the Store of this kind.
	glance(s *Store, name string, holderTTLs bool) Glance
	close(ctx context.Context) error
}

// LockSpec says which lock Locker makes. The zero value is a plain
// exclusive lock, which every kind of store makes; the rest needs a
// store with sessions (LockSpec.Needs names what needs it).
type LockSpec struct {
	// Shared asks for the read side of a baton.RWMutex.
	Shared bool
	// Delay is the lock-delay of a plain lock (baton.LockDelay); 0: none.
	Delay time.Duration
	// Revocable makes a plain lock revocable on request (baton.Revocable).
	Revocable bool
}

// Needs names what in spec needs a store with sessions, for the message
// of a store without (Options.Recipe), or "" when any store makes the
// lock.
func (spec LockSpec) Needs() string {
	switch {
	case spec.Shared:
		return "lock --shared (a read lock)"
	case spec.Delay > 0:
		return "lock --lock-delay"
	case spec.Revocable:
		return "lock --on-revoke term"
	}
	return ""
}

// Mutex makes the plain exclusive lock on name, which every kind of store
// makes: a baton.Mutex on the session, or a Redis or Redlock lock with
// the TTL and telemetry the store was opened with.
func (s *Store) Mutex(name string) baton.Locker {
	return s.kind.mutex(name)
}

// Locker makes the lock on name that spec asks for: a Redis or Redlock
// lock with the TTL and telemetry the store was opened with, or a recipe
// on the session. It fails for a spec the kind cannot make.
func (s *Store) Locker(name string, spec LockSpec) (baton.Locker, error) {
	return s.kind.locker(name, spec)
}

// Election makes the election on name, on the store's session; what names
// the command for the error of a store without sessions.
func (s *Store) Election(name, what string) (*baton.Election, error) {
	if s.Session == nil {
		return nil, s.URL.needSession(what)
	}
	return baton.NewElection(s.Session, name), nil
}

// Semaphore makes the semaphore of n permits on name, on the store's
// session; what names the command for the error of a store without
// sessions.
func (s *Store) Semaphore(name string, n int, what string) (*baton.Semaphore, error) {
	if s.Session == nil {
		return nil, s.URL.needSession(what)
	}
	return baton.NewSemaphore(s.Session, name, n), nil
}

// SetIdentity makes every hold the store makes from now on write id (what
// `baton status` shows of a holder).
func (s *Store) SetIdentity(id baton.Identity) {
	s.kind = s.kind.withIdentity(id)
	s.Session = s.kind.session()
}

// TTL is the TTL the store granted: the session timeout on ZooKeeper and
// etcd (which may differ from the one asked), each lock's validity on
// Redis.
func (s *Store) TTL() time.Duration { return s.kind.ttl() }

// Err is nil while the store can be used, and the session's error once
// the session has ended: a new Store must be opened to go on.
func (s *Store) Err() error {
	if s.Session == nil {
		return nil
	}
	return s.Session.Err()
}

// Expiry is the session's loss deadline (the last confirmed contact plus
// the TTL minus a margin), or the zero Time for a store whose holds have
// deadlines of their own only (Redis). A hold's own deadline is its
// Lease's Deadline.
func (s *Store) Expiry() time.Time {
	if s.Session == nil {
		return time.Time{}
	}
	if e, ok := s.Session.Conn().(backend.Expirer); ok {
		return e.Expiry()
	}
	return time.Time{}
}

// RestartGuard returns an error while a Redis server's restart guard
// holds locks back (the server restarted, or has been up for less than
// the TTL), and nil otherwise: always on a store with sessions.
func (s *Store) RestartGuard() error { return s.kind.restartGuard() }

// CredentialsIgnored reports whether the store took the URL's user and
// password without checking them (an etcd with authentication off).
func (s *Store) CredentialsIgnored() bool {
	return s.URL.User != "" && s.Session != nil && etcd.CredentialsIgnored(s.Session)
}

// Close ends the session or closes the Redis clients, bounded by ctx.
func (s *Store) Close(ctx context.Context) error {
	var err error
	if s.kind != nil {
		err = s.kind.close(ctx)
	}
	if s.closer != nil {
		if cerr := s.closer(); err == nil {
			err = cerr
		}
	}
	return err
}

// sessionKind is a store with sessions: ZooKeeper or etcd.
type sessionKind struct{ s *baton.Session }

// OnSession is the Store of a session opened elsewhere (the bench's
// in-process memory store); u names it in messages.
func OnSession(u URL, s *baton.Session) *Store { return newSessionStore(u, s) }

func newSessionStore(u URL, s *baton.Session) *Store {
	return &Store{URL: u, Session: s, kind: sessionKind{s}}
}

func (k sessionKind) mutex(name string) baton.Locker { return baton.NewMutex(k.s, name) }

func (k sessionKind) locker(name string, spec LockSpec) (baton.Locker, error) {
	if spec.Shared {
		return baton.NewRWMutex(k.s, name).RLocker(), nil
	}
	opts := []baton.MutexOption{baton.LockDelay(spec.Delay)}
	if spec.Revocable {
		opts = append(opts, baton.Revocable())
	}
	return baton.NewMutex(k.s, name, opts...), nil
}

func (k sessionKind) withIdentity(id baton.Identity) kind {
	return sessionKind{k.s.WithIdentity(id)}
}

func (k sessionKind) session() *baton.Session         { return k.s }
func (k sessionKind) ttl() time.Duration              { return k.s.TTL() }
func (k sessionKind) restartGuard() error             { return nil }
func (k sessionKind) close(ctx context.Context) error { return k.s.Close(ctx) }

// redisKind is a single Redis server (Client) or Redlock's masters
// (Quorum): locks only, each with the store's TTL as its validity.
type redisKind struct {
	u       URL
	client  *redis.Client // redis://, rediss://
	quorum  *redis.Quorum // redlock://
	opts    []redis.Option
	lockTTL time.Duration
}

func (k redisKind) locker(name string, spec LockSpec) (baton.Locker, error) {
	if what := spec.Needs(); what != "" {
		return nil, k.u.needSession(what)
	}
	return k.mutex(name), nil
}

func (k redisKind) mutex(name string) baton.Locker {
	if k.quorum != nil {
		return redis.NewRedlock(k.quorum, name, k.opts...)
	}
	return redis.NewMutex(k.client, name, k.opts...)
}

func (k redisKind) withIdentity(id baton.Identity) kind {
	k.opts = append(k.opts[:len(k.opts):len(k.opts)], redis.WithIdentity(id))
	return k
}

func (k redisKind) session() *baton.Session { return nil }
func (k redisKind) ttl() time.Duration      { return k.lockTTL }

func (k redisKind) restartGuard() error {
	if k.quorum != nil {
		return k.quorum.RestartGuard(k.lockTTL)
	}
	return k.client.RestartGuard(k.lockTTL)
}

func (k redisKind) close(context.Context) error {
	if k.quorum != nil {
		return k.quorum.Close()
	}
	return k.client.Close()
}
