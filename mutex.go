package baton

import (
	"context"
	"slices"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/handle"
	"github.com/batonhq/baton/internal/telemetry"
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
// On one name, a Mutex is a writer to an RWMutex: it waits for the readers
// and writers queued before it, and they wait for it.
//
// A Mutex value is one holder, as a sync.Mutex is one lock: goroutines
// that share it take turns, Lock on a Mutex that holds (or whose lost
// hold was not yet given back by Unlock) waits for Unlock, and TryLock
// returns ErrLocked. With the Reentrant option a Mutex counts instead:
// Lock on a Mutex that holds returns the same lease at once, and only the
// last of as many Unlocks releases it. A Mutex must not be copied after
// first use.
type Mutex struct {
	s     *Session
	name  string
	bad   error             // from CleanName: every call returns it
	tel   *telemetry.Handle // nil: no telemetry
	data  []byte            // our node's data, if not the session's identity
	delay time.Duration     // the lock-delay; 0: none
	// revocable: holds watch for a revocation request (Revocable)
	revocable bool

	gate handle.Gate         // one call at a time on this handle
	held nodeHeld            // what this handle holds, by level
	turn handle.Turn[*Lease] // takes turns like a sync.Mutex unless Reentrant
}

// NewMutex returns a mutex on name (a ZooKeeper path, an etcd prefix),
// with LockDelay if given. It does no I/O.
func NewMutex(s *Session, name string, opts ...MutexOption) *Mutex {
	name, bad := cleanOrKeep(s, name)
	m := &Mutex{s: s, name: name, bad: bad, tel: s.tel.Handle(recipeMutex, name)}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Name is the lock's name on the store.
func (m *Mutex) Name() string { return m.name }

// Lock acquires the lock, waiting in line as long as ctx allows (first,
// without Reentrant, for this Mutex's own Unlock if it holds). It returns
// the lease of this acquisition, whose Token is the fencing token and whose
// Done signals a loss: the session ending, or our node removed by someone
// else (Err then wraps ErrLost and ErrRevoked).
//
// If ctx ends first, our node is removed and ctx.Err() is returned; nothing
// is left behind. If the session is lost while waiting, Lock returns
// promptly with an error satisfying IsSessionGone.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, false)
}

// TryLock acquires the lock only if nobody holds or waits for it, and
// returns ErrLocked otherwise (also, without Reentrant, when this Mutex
// holds). It never waits for another holder.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, true)
}

// mutexBlockers are the kinds a Mutex waits for: other Mutex contenders,
// and an RWMutex's readers and writers on the same name, for which a Mutex
// is a writer (RWMutex counts KindLock nodes as writers).
var mutexBlockers = []string{backend.KindLock, backend.KindRead, backend.KindWrite}

func (m *Mutex) acquire(ctx context.Context, try bool) (l *Lease, err error) {
	a := m.tel.StartAcquire(ctx)
	if a != nil {
		defer func() { a.End(outcomeOf(err), tokenOf(l), err) }()
	}
	if m.bad != nil {
		return nil, m.bad
	}
	return m.turn.Take(ctx, try, m.name, "Mutex", &m.gate, func() (*Lease, error) { return m.lock(ctx, a, try) })
}

// lock is acquire's turn on the store, inside the gate.
func (m *Mutex) lock(ctx context.Context, a *telemetry.Acquire, try bool) (*Lease, error) {
	if l, err := reenter(ctx, &m.held); l != nil || err != nil {
		return l, err
	}
	if err := m.s.Err(); err != nil {
		return nil, err
	}
	me, err := takeTurn(ctx, a, m.s.conn, turn{
		dir: m.name, kind: backend.KindLock, data: m.nodeData(), blocker: prevOfKinds(mutexBlockers...),
		try: try, busy: func(kids []backend.Node) bool {
			for _, k := range kids {
				if slices.Contains(mutexBlockers, k.Kind) {
					return true
				}
			}
			return false
		},
	})
	if err != nil {
		return nil, err
	}
	if m.delay > 0 {
		if err := m.markHold(ctx, me); err != nil {
			return nil, err
		}
	}
	h := holdNodeRevocable(m.s, m.tel, a, m.name, me, m.revocable)
	return m.held.Take(h, h.lease), nil
}

// nodeData is what our node carries: the session's identity, or the
// participant id of a LeaderSelector.
func (m *Mutex) nodeData() []byte {
	if m.data != nil {
		return m.data
	}
	return m.s.nodeData()
}

// Unlock releases the hold (with Reentrant, one level of it; the last level
// releases), and the next Lock on this Mutex may go. Releasing ends the
// lease and deletes our node (that incarnation only: never another
// holder's), even when ctx is already done: the delete runs detached from
// ctx, bounded by the session TTL. If the delete fails while the session
// lives, Unlock returns its error and goes on deleting the node in the
// background until it is gone or the session ends, so a dropped error does
// not leave the lock taken; calling Unlock again retries at once. Unlock
// without a hold returns ErrNotHeld. After a loss it returns an error
// wrapping ErrLost, and still removes our node if the store has it.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.gate.Enter(ctx); err != nil {
		return err
	}
	defer m.gate.Leave()
	return m.held.Release(func(h *nodeHold) (bool, error) {
		// The hold ends here even if its delete fails (the next Lock
		// retries it), so the value is free for the next Lock.
		defer m.turn.Release(h.lease)
		if m.delay > 0 && h.lease.Err() == nil {
			m.unmarkHold(ctx, h.node)
		}
		return h.free(ctx)
	})
}

// Held reports whether this handle holds the lock (its lease is live).
func (m *Mutex) Held() bool { return m.held.Live() }

// Reentrant makes a Mutex count its holds instead of taking turns: Lock on
// a Mutex that holds a live lease returns that lease at once and raises a
// level, and Unlock lowers it; the last Unlock releases. It suits one
// holder whose calls nest (a function that locks and calls another that
// locks the same Mutex), not goroutines sharing a Mutex, which would all be
// let in at once.
func Reentrant() MutexOption {
	return func(m *Mutex) { m.turn.Reentrant = true }
}
