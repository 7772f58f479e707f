package baton

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/handle"
	"github.com/batonhq/baton/internal/telemetry"
)

// RWMutex is a distributed reader/writer lock: the seeds' shared lock.
// Readers and writers queue as ephemeral sequential nodes under the lock's
// name. A reader waits only for the nearest earlier writer, so any number of
// readers hold the lock together; a writer waits for the nearest earlier
// node of either kind, so it holds the lock alone. Each waiter watches one
// node, so a release wakes only the waiters directly behind it (no herd),
// and a writer queued before later readers goes first (no writer
// starvation).
//
// On ZooKeeper the nodes follow Apache Curator's InterProcessReadWriteMutex
// layout (_c_<uuid>-__READ__<seq>, _c_<uuid>-__WRIT__<seq>), so Go and Java
// services can share one lock path. Exclusive lock nodes of other clients
// on the same path (baton's Mutex, kazoo's Lock and WriteLock, Curator's
// and go-zookeeper's mutexes) count as writers; kazoo's ReadLock nodes as
// readers. On every store, baton's Mutex on the same name is a writer.
//
// An RWMutex value is one holder, re-entrant in each mode. A handle that
// holds the write lock may also take the read lock (a downgrade: release the
// write lock afterwards and keep reading); the reverse, an upgrade, is
// refused with ErrUpgrade because it would wait for itself forever. An
// RWMutex must not be copied after first use.
type RWMutex struct {
	s    *Session
	name string
	bad  error             // from CleanName: every call returns it
	rtel *telemetry.Handle // read side; nil: no telemetry
	wtel *telemetry.Handle // write side

	gate handle.Gate // one call at a time on this handle
	r    nodeHeld    // read side
	w    nodeHeld    // write side
}

// NewRWMutex returns a reader/writer lock on name (a ZooKeeper path, an
// etcd prefix). It does no I/O.
func NewRWMutex(s *Session, name string) *RWMutex {
	name, bad := cleanOrKeep(s, name)
	return &RWMutex{s: s, name: name, bad: bad, rtel: s.tel.Handle(recipeRead, name), wtel: s.tel.Handle(recipeWrite, name)}
}

// Name is the lock's name on the store.
func (m *RWMutex) Name() string { return m.name }

// RLock acquires the lock for reading, waiting behind the nearest earlier
// writer as long as ctx allows. It returns the lease of this acquisition,
// whose Token is the fencing token and whose Done signals a loss.
//
// If ctx ends first, our node is removed and ctx.Err() is returned. If the
// session is lost while waiting, RLock returns promptly with an error
// satisfying IsSessionGone.
func (m *RWMutex) RLock(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, false, false)
}

// TryRLock acquires the lock for reading only if no writer holds or waits
// for it, and returns ErrLocked otherwise. It never waits.
func (m *RWMutex) TryRLock(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, false, true)
}

// Lock acquires the lock for writing, waiting behind every earlier reader
// and writer as long as ctx allows. It returns the lease of this
// acquisition. Cancel and loss behave as for RLock. Lock while this handle
// holds the read lock returns ErrUpgrade.
func (m *RWMutex) Lock(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, true, false)
}

// TryLock acquires the lock for writing only if nobody holds or waits for
// it, and returns ErrLocked otherwise. It never waits.
func (m *RWMutex) TryLock(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, true, true)
}

func (m *RWMutex) side(write bool) *nodeHeld {
	if write {
		return &m.w
	}
	return &m.r
}

func (m *RWMutex) acquire(ctx context.Context, write, try bool) (l *Lease, err error) {
	tel := m.rtel
	if write {
		tel = m.wtel
	}
	a := tel.StartAcquire(ctx)
	if a != nil {
		defer func() { a.End(outcomeOf(err), tokenOf(l), err) }()
	}
	if m.bad != nil {
		return nil, m.bad
	}
	if err := m.gate.Enter(ctx); err != nil {
		return nil, err
	}
	defer m.gate.Leave()
	held := m.side(write)
	if l, err := reenter(ctx, held); l != nil || err != nil {
		return l, err
	}
	if write && m.r.Live() {
		return nil, fmt.Errorf("%w: %s", ErrUpgrade, m.name)
	}
	var own string // our own writer, which our reader does not wait for
	if h, l, ok := m.w.Current(); !write && ok && l.Err() == nil {
		own = h.node.Path
	}
	if err := m.s.Err(); err != nil {
		return nil, err
	}

	kind, blocker := backend.KindRead, readerBlocker(own)
	if write {
		kind, blocker = backend.KindWrite, prevOfKinds(backend.KindRead, backend.KindWrite, backend.KindLock)
	}
	me, err := takeTurn(ctx, a, m.s.conn, turn{
		dir: m.name, kind: kind, data: m.s.nodeData(), blocker: blocker,
		try: try, busy: func(kids []backend.Node) bool {
			for _, k := range kids {
				if k.Path != own && (exclusive(k) || write && k.Kind == backend.KindRead) {
					return true
				}
			}
			return false
		},
	})
	if err != nil {
		return nil, err
	}
	h := holdNode(m.s, tel, a, m.name, me)
	return held.Take(h, h.lease), nil
}

// exclusive reports whether n is a writer: an RWMutex writer, or a
// foreign exclusive lock node on the same path (kazoo's Lock and WriteLock
// both name theirs "__lock__", which parses as KindLock).
func exclusive(n backend.Node) bool { return n.Kind == backend.KindWrite || n.Kind == backend.KindLock }

// readerBlocker waits for the nearest earlier writer other than own (the
// path of a writer this same handle holds, or "").
func readerBlocker(own string) blockerFunc {
	return func(kids []backend.Node, me int) int {
		for j := me - 1; j >= 0; j-- {
			if exclusive(kids[j]) && kids[j].Path != own {
				return j
			}
		}
		return -1
	}
}

// RUnlock releases one level of the read lock; the last level ends its
// lease and deletes our node, even when ctx is already done (the delete
// runs detached from ctx, bounded by the session TTL). If the delete fails
// while the session lives, RUnlock returns its error and goes on deleting
// the node in the background until it is gone or the session ends;
// calling RUnlock again retries at once. Without a read hold it returns
// ErrNotHeld; after a loss, an error wrapping ErrLost (our node is still
// removed if the store has it).
func (m *RWMutex) RUnlock(ctx context.Context) error { return m.release(ctx, false) }

// Unlock releases one level of the write lock, as RUnlock does for the read
// lock.
func (m *RWMutex) Unlock(ctx context.Context) error { return m.release(ctx, true) }

func (m *RWMutex) release(ctx context.Context, write bool) error {
	if err := m.gate.Enter(ctx); err != nil {
		return err
	}
	defer m.gate.Leave()
	return release(ctx, m.side(write))
}

// RHeld reports whether this handle holds the read lock (its lease is live).
func (m *RWMutex) RHeld() bool { return m.r.Live() }

// Held reports whether this handle holds the write lock (its lease is live).
func (m *RWMutex) Held() bool { return m.w.Live() }
