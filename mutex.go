package baton

import (
	"context"
	"sync"
)

// Mutex is a distributed exclusive lock: the seeds' lock without herd
// effect. Each contender creates an ephemeral sequential node under the
// lock's name; the lowest holds the lock, and every other contender watches
// only the node just before its own, so a release wakes exactly one waiter
// and the lock is granted in arrival order (FIFO).
//
// On ZooKeeper the nodes follow Apache Curator's InterProcessMutex layout
// (_c_<uuid>-lock-<seq>), and kazoo's and go-zookeeper's lock nodes count as
// contenders, so Go and Java services can share one lock path. On etcd the
// layout is that of the concurrency package (NAME/<lease id>), so
// `etcdctl lock NAME` contends with it.
//
// A Mutex value is one holder. It is re-entrant: Lock on a Mutex that
// already holds increments a count and Unlock decrements it. Use one Mutex
// per holder; a Mutex must not be copied after first use.
type Mutex struct {
	s    *Session
	name string

	turn chan struct{} // serialises Lock/TryLock/Unlock on this handle

	mu    sync.Mutex
	node  Node
	count int
	lease *Lease
	end   func(error)
}

// NewMutex returns a mutex on name (a ZooKeeper path, an etcd prefix). It
// does no I/O.
func NewMutex(s *Session, name string) *Mutex {
	return &Mutex{s: s, name: name, turn: make(chan struct{}, 1)}
}

// Name is the lock's name on the store.
func (m *Mutex) Name() string { return m.name }

func (m *Mutex) enter(ctx context.Context) error {
	select {
	case m.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Mutex) leave() { <-m.turn }

// reenter returns the current lease with its count raised, if this handle
// holds the lock and the lease is live.
func (m *Mutex) reenter() *Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.count > 0 && m.lease.Err() == nil {
		m.count++
		return m.lease
	}
	return nil
}

// Lock acquires the lock, waiting in line as long as ctx allows. It returns
// the lease of this acquisition, whose Token is the fencing token and whose
// Done signals a loss.
//
// If ctx ends first, our node is removed and ctx.Err() is returned; nothing
// is left behind. If the session is lost while waiting, Lock returns
// promptly with an error satisfying IsSessionGone.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, false)
}

// TryLock acquires the lock only if nobody holds or waits for it, and
// returns ErrLocked otherwise. It never waits for another holder.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, true)
}

func (m *Mutex) acquire(ctx context.Context, try bool) (*Lease, error) {
	if err := m.enter(ctx); err != nil {
		return nil, err
	}
	defer m.leave()
	if l := m.reenter(); l != nil {
		return l, nil
	}
	if err := m.s.Err(); err != nil {
		return nil, err
	}
	me, err := takeTurn(ctx, m.s.conn, m.name, KindLock, m.s.nodeData(), prevOfKinds(KindLock), try, func(kids []Node) bool {
		for _, k := range kids {
			if k.Kind == KindLock {
				return true
			}
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	l, end := NewLease(m.name, me.Token)
	l.watchSession(m.s)
	m.mu.Lock()
	m.node, m.count, m.lease, m.end = me, 1, l, end
	m.mu.Unlock()
	return l, nil
}

// Unlock releases one level of the lock. The last level deletes our node
// (that incarnation only: never another holder's) and ends the lease.
// Unlock without a hold returns ErrNotHeld. After a loss it returns an
// error wrapping ErrLost, and still removes our node if the store has it.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.enter(ctx); err != nil {
		return err
	}
	defer m.leave()
	m.mu.Lock()
	if m.count == 0 {
		m.mu.Unlock()
		return ErrNotHeld
	}
	m.count--
	if m.count > 0 {
		m.mu.Unlock()
		return nil
	}
	node, lease, end := m.node, m.lease, m.end
	m.node, m.lease, m.end = Node{}, nil, nil
	m.mu.Unlock()

	lost := lease.Err()
	err := m.s.conn.Delete(ctx, node)
	end(ErrNotHeld)
	if lost != nil {
		return lost
	}
	return err
}

// Held reports whether this handle holds the lock (its lease is live).
func (m *Mutex) Held() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count > 0 && m.lease.Err() == nil
}
