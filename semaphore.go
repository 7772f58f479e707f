package baton

import (
	"context"
	"fmt"
	"sync"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/telemetry"
)

// Semaphore is a distributed counting semaphore: at most n leases are held
// at once across every client sharing its name.
//
// It has the shape of Apache Curator's InterProcessSemaphoreV2, and on
// ZooKeeper its layout (NAME/locks for a Mutex, NAME/leases holding one
// ephemeral sequential node per lease). An acquirer first takes the Mutex,
// which queues acquirers fairly and without herd effect; holding it, it
// creates its lease node and is admitted if that node is among the first n
// leases. Otherwise it alone watches the leases and checks again when one
// goes. Either way it then releases the Mutex for the next acquirer. Because
// a new lease always sorts after the existing ones, admission by position
// never lets more than n in, even while the Mutex changes hands.
//
// kazoo's Semaphore keeps a different layout (NAME/<uuid hex> leases):
// Acquire refuses a name holding kazoo leases with ErrIncompatible.
//
// All clients of one semaphore must use the same n: n is recorded with the
// semaphore (NAME/permits, in the format of Curator's SharedCount), and an
// Acquire with another n fails with ErrPermitsMismatch while any lease is
// held or waited for. Once none is, the next Acquire records its own n:
// the number can change when the semaphore is empty. (A Curator client
// that does not read the record is not checked.) A Semaphore value may be
// used by many goroutines; each Acquire is a separate lease.
type Semaphore struct {
	s    *Session
	name string
	bad  error // from CleanName: every call returns it
	n    int
	tel  *telemetry.Handle // nil: no telemetry

	mu   sync.Mutex
	held map[*Lease]*semHold
}

// semHold is one lease of a Semaphore; freeing is set while a Release
// gives it back.
type semHold struct {
	*nodeHold
	freeing bool
}

// NewSemaphore returns a semaphore of n permits on name (a ZooKeeper path,
// an etcd prefix). It does no I/O. With n < 1 or n > MaxPermits (more
// than the semaphore's record of n holds), Acquire and TryAcquire return
// an error wrapping ErrInvalidPermits.
func NewSemaphore(s *Session, name string, n int) *Semaphore {
	name, bad := cleanOrKeep(s, name)
	return &Semaphore{s: s, name: name, bad: bad, n: n, tel: s.tel.Handle(recipeSemaphore, name), held: make(map[*Lease]*semHold)}
}

// Name is the semaphore's name on the store.
func (m *Semaphore) Name() string { return m.name }

// Permits is n, the number of leases that may be held at once.
func (m *Semaphore) Permits() int { return m.n }

func (m *Semaphore) locksDir() string  { return backend.Join(m.name, "locks") }
func (m *Semaphore) leasesDir() string { return backend.Join(m.name, "leases") }

// Acquire takes one lease, waiting in line as long as ctx allows. The lease's
// Token is a fencing token and its Done signals a loss; give it back with
// Release.
//
// If ctx ends first, nothing is left behind and ctx.Err() is returned. If
// the session is lost while waiting, Acquire returns promptly with an error
// satisfying IsSessionGone.
func (m *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, false)
}

// TryAcquire takes one lease only if one is free and no other client is in
// line for it, and returns ErrLocked otherwise. It never waits for a holder.
func (m *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, true)
}

func (m *Semaphore) acquire(ctx context.Context, try bool) (*Lease, error) {
	return m.acquireWith(ctx, try, m.s.nodeData)
}

// acquireWith is acquire writing data() into the lease node.
func (m *Semaphore) acquireWith(ctx context.Context, try bool, data func() []byte) (l *Lease, err error) {
	a := m.tel.StartAcquire(ctx)
	if a != nil {
		defer func() { a.End(outcomeOf(err), tokenOf(l), err) }()
	}
	if m.bad != nil {
		return nil, m.bad
	}
	if m.n < 1 || m.n > MaxPermits {
		return nil, fmt.Errorf("%w: semaphore %s with %d permits (want 1 to %d)", ErrInvalidPermits, m.name, m.n, MaxPermits)
	}
	if err := m.s.Err(); err != nil {
		return nil, err
	}
	c := m.s.conn
	if try {
		kids, err := c.Children(ctx, m.leasesDir())
		if err != nil {
			return nil, err
		}
		m.permits(kids)
		if countKind(kids, backend.KindLease) >= m.n {
			return nil, fmt.Errorf("%w: %s", ErrLocked, m.name)
		}
	}
	// The acquirers' line: each Acquire queues like a stranger, even
	// several on one Semaphore. Holding the line's head is only a turn to
	// look at the leases, so it needs no lease of its own.
	head, err := takeTurn(ctx, a, c, turn{
		dir: m.locksDir(), kind: backend.KindLock, data: m.s.nodeData(), blocker: prevOfKinds(backend.KindLock),
		try: try, busy: func(kids []backend.Node) bool { return countKind(kids, backend.KindLock) > 0 },
	})
	if err != nil {
		return nil, err
	}
	defer removeNode(ctx, c, head)

	if err := checkSemaphoreLayout(ctx, c, m.name); err != nil {
		return nil, err
	}
	if err := m.checkPermits(ctx, c, head); err != nil {
		return nil, err
	}
	me, kids, err := enqueue(ctx, c, m.leasesDir(), backend.KindLease, data())
	if err != nil {
		return nil, err
	}
	first := true
	for {
		m.permits(kids)
		i := rankOf(kids, me, backend.KindLease)
		if first {
			// Our position in line is the leases ahead of us beyond
			// the n that hold a permit.
			a.Queued(max(i-m.n+1, 0))
			first = false
		}
		if i < 0 {
			err = fmt.Errorf("%w: our lease node %s is gone", ErrLost, me.Path)
			break
		}
		if i < m.n {
			break
		}
		if try {
			err = fmt.Errorf("%w: %s", ErrLocked, m.name)
			break
		}
		a.Wait()
		if err = c.WaitChildren(ctx, m.leasesDir(), kids); err != nil {
			break
		}
		if kids, err = c.Children(ctx, m.leasesDir()); err != nil {
			break
		}
	}
	if err != nil {
		removeNode(ctx, c, me)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	h := holdNode(m.s, m.tel, a, m.name, me)
	m.mu.Lock()
	m.held[h.lease] = &semHold{nodeHold: h}
	m.mu.Unlock()
	return h.lease, nil
}

// Release gives back a lease obtained from this Semaphore: the lease ends
// and its node is deleted, even when ctx is already done (the delete runs
// detached from ctx, bounded by the session TTL). If the delete fails while
// the session lives, Release returns its error and goes on deleting the
// node in the background until it is gone or the session ends; the lease
// stays with this Semaphore, and calling Release again retries at once. A
// lease that is not held here (never was, already released, or being
// released by another call) is ErrNotHeld. After a loss Release returns an error wrapping ErrLost, and
// still removes the node if the store has it.
func (m *Semaphore) Release(ctx context.Context, l *Lease) error {
	m.mu.Lock()
	h, ok := m.held[l]
	if !ok || h.freeing {
		m.mu.Unlock()
		return ErrNotHeld
	}
	h.freeing = true
	m.mu.Unlock()
	over, err := h.free(ctx)
	m.mu.Lock()
	if over {
		delete(m.held, l)
	}
	h.freeing = false
	m.mu.Unlock()
	return err
}

// countKind counts the nodes of one kind.
func countKind(kids []backend.Node, kind string) int {
	n := 0
	for _, k := range kids {
		if k.Kind == kind {
			n++
		}
	}
	return n
}

// permits records the permits held and free in a listing of the leases:
// the first n lease nodes hold a permit; nodes after them wait for one.
func (m *Semaphore) permits(kids []backend.Node) {
	if m.tel == nil {
		return
	}
	held := min(countKind(kids, backend.KindLease), m.n)
	m.tel.Permits(held, m.n-held)
}

// rankOf is the position of me among the nodes of kind, or -1 if absent.
func rankOf(kids []backend.Node, me backend.Node, kind string) int {
	r := 0
	for _, k := range kids {
		if k.Path == me.Path {
			return r
		}
		if k.Kind == kind {
			r++
		}
	}
	return -1
}
