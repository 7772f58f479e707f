package baton

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/batonhq/baton/internal/handle"
	"github.com/batonhq/baton/internal/telemetry"
)

// OnStore returns l placed on store in a MultiLock's order: parts are
// sorted by store, then by name. store is any label the processes sharing
// the locks agree on (an address, "zk", "redis"); name, if empty, is l's
// Name() or Key().
func OnStore(store, name string, l Locker) Locker {
	if name == "" {
		name = nameOf(l)
	}
	return placed{Locker: l, store: store, name: name}
}

// placed is a Locker with its place in the global order.
type placed struct {
	Locker
	store, name string
}

func nameOf(l Locker) string {
	switch l := l.(type) {
	case placed:
		return l.name
	case interface{ Name() string }:
		return l.Name()
	case interface{ Key() string }:
		return l.Key()
	}
	return ""
}

func storeOf(l Locker) string {
	if p, ok := l.(placed); ok {
		return p.store
	}
	return ""
}

// MultiLock takes several locks all or nothing, as Curator's
// InterProcessMultiLock does. Its parts may be of any kind and on any
// store (see Locker).
//
// Lock takes the parts one at a time in one global order, by store and
// then name, whatever order they were given in, so two multi-locks over
// overlapping sets never wait for each other in a cycle: no deadlock. If
// a part fails, or ctx ends, or a part already taken is lost while a later
// one is awaited, the parts taken are released (in reverse) and nothing
// is left held. Unlock releases the parts in reverse order.
//
// The one Lease it hands out covers every part: Tokens lists each part's
// fencing token in lock order (Token is the first part's), Parts their
// leases, and Done closes as soon as any part ends (lost, or released
// behind the MultiLock's back), with that part's error. Its
// RevokeRequested closes as soon as any part's does (a part made
// Revocable whose holder is asked to let go, by Revoke, `baton revoke` or
// Curator's Revoker); like a part's, the lease stays held until Unlock.
//
// A MultiLock is not re-entrant: Lock while held returns ErrLocked. Its
// parts should not be used on their own while it holds them.
//
// Each part reports its own metrics. The MultiLock as a whole reports as
// recipe multilock, with the parts' names joined by spaces as its name,
// to the telemetry of its first part (in lock order) that is a Mutex or
// RWMutex of a Session: Lock is an acquisition (baton.acquire.duration,
// and baton.waiting for the whole call) and the lease a hold (baton.held,
// baton.hold.duration, baton.lost with the lost part's reason). A
// MultiLock of Redis locks alone reports through its parts only.
type MultiLock struct {
	parts []Locker // in lock order
	tel   *telemetry.Handle

	gate  handle.Gate
	mu    sync.Mutex
	held  []Locker // parts still to give back, in lock order
	lease *Lease
	end   func(error)
	bad   error // why the parts cannot be ordered
}

// NewMultiLock returns a multi-lock over parts. It does no I/O. Two parts
// with the same store and name, or a part without a name, make Lock fail
// with ErrInvalidName.
func NewMultiLock(parts ...Locker) *MultiLock {
	ps := slices.Clone(parts)
	slices.SortStableFunc(ps, func(a, b Locker) int {
		return cmp.Or(cmp.Compare(storeOf(a), storeOf(b)), cmp.Compare(nameOf(a), nameOf(b)))
	})
	m := &MultiLock{parts: ps}
	for i, p := range ps {
		switch {
		case nameOf(p) == "":
			m.bad = fmt.Errorf("%w: a multi-lock part has no name (wrap it with OnStore)", ErrInvalidName)
		case i > 0 && nameOf(p) == nameOf(ps[i-1]) && storeOf(p) == storeOf(ps[i-1]):
			m.bad = fmt.Errorf("%w: %q is twice in one multi-lock", ErrInvalidName, nameOf(p))
		}
	}
	if len(ps) == 0 {
		m.bad = fmt.Errorf("%w: a multi-lock needs at least one part", ErrInvalidName)
	}
	for _, p := range ps {
		if s := sessionOf(p); s != nil {
			m.tel = s.tel.Handle(recipeMultiLock, strings.Join(m.Names(), " "))
			break
		}
	}
	return m
}

// sessionOf is the session of a part on one, or nil.
func sessionOf(l Locker) *Session {
	if p, ok := l.(placed); ok {
		l = p.Locker
	}
	switch l := l.(type) {
	case *Mutex:
		return l.s
	case *RWMutex:
		return l.s
	}
	return nil
}

// Names returns the parts' names in lock order.
func (m *MultiLock) Names() []string {
	out := make([]string, len(m.parts))
	for i, p := range m.parts {
		out[i] = nameOf(p)
	}
	return out
}

// Lock takes every part, in the global order, waiting as long as ctx
// allows, and returns the lease that covers them all. On any failure it
// releases what it took and returns the error.
func (m *MultiLock) Lock(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, false)
}

// TryLock takes every part only if each is free, all or nothing: it tries
// the parts in the global order, each with its TryLock, and at the first
// that is taken (an error wrapping ErrLocked) or fails it releases the
// parts it took, in reverse, and returns that error. It never waits for
// another holder.
func (m *MultiLock) TryLock(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, true)
}

func (m *MultiLock) acquire(ctx context.Context, try bool) (lease *Lease, err error) {
	if m.bad != nil {
		return nil, m.bad
	}
	a := m.tel.StartAcquire(ctx)
	if a != nil {
		a.Wait()
		defer func() { a.End(outcomeOf(err), tokenOf(lease), err) }()
	}
	if err := m.gate.Enter(ctx); err != nil {
		return nil, err
	}
	defer m.gate.Leave()
	m.mu.Lock()
	holding := len(m.held) > 0
	m.mu.Unlock()
	if holding {
		if m.lease.Err() == nil {
			return nil, fmt.Errorf("%w: this multi-lock already holds", ErrLocked)
		}
		// A part was lost: give back what is left first.
		if err := m.release(ctx); err != nil && !lostOrNotHeld(err) {
			return nil, err
		}
	}
	// wctx ends when ctx does or when a part already taken ends, so that a
	// lost part does not leave us waiting on the next one.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var leases []*Lease
	var taken []Locker
	for _, p := range m.parts {
		take := p.Lock
		if try {
			take = p.TryLock
		}
		l, err := take(wctx)
		if err == nil {
			taken, leases = append(taken, p), append(leases, l)
			go func() {
				select {
				case <-l.Done():
					cancel(fmt.Errorf("%s: %w", l.Key(), l.Err()))
				case <-wctx.Done():
				}
			}()
			continue
		}
		if c := context.Cause(wctx); c != nil && ctx.Err() == nil {
			err = c // a part taken ended while we waited
		}
		return nil, errors.Join(err, unlockAll(ctx, taken))
	}
	for _, l := range leases {
		if l.Err() != nil { // lost between its grant and now
			err := fmt.Errorf("%s: %w", l.Key(), l.Err())
			return nil, errors.Join(err, unlockAll(ctx, taken))
		}
	}
	parts := make([]*handle.Lease, len(leases))
	for i, l := range leases {
		parts[i] = l.inner()
	}
	hl, end := handle.NewMultiLease(strings.Join(m.Names(), " "), leases[0].Token(), parts)
	lease = leaseOf(hl)
	if m.tel != nil {
		end = reportEnd(lease, end, m.tel.StartHold(ctx, lease.Token(), nil))
	}
	for _, l := range leases {
		go func() {
			revoke := l.RevokeRequested()
			for {
				select {
				case <-l.Done():
					end(fmt.Errorf("%s: %w", l.Key(), l.Err()))
					return
				case <-revoke:
					lease.inner().RequestRevoke()
					revoke = nil
				case <-lease.Done():
					return
				}
			}
		}()
	}
	m.mu.Lock()
	m.held, m.lease, m.end = taken, lease, end
	m.mu.Unlock()
	return lease, nil
}

// Unlock ends the lease (so Done closes first) and releases every part in
// reverse order, even when ctx is done (as each part's Unlock does). The
// parts whose release failed are deleted in the background, as with each
// part's Unlock, and stay held here: calling Unlock again retries them. Unlock without
// a hold returns ErrNotHeld; after a loss it returns the lost part's error
// (wrapping ErrLost) and still releases the others.
func (m *MultiLock) Unlock(ctx context.Context) error {
	if err := m.gate.Enter(ctx); err != nil {
		return err
	}
	defer m.gate.Leave()
	return m.release(ctx)
}

func (m *MultiLock) release(ctx context.Context) error {
	m.mu.Lock()
	held, lease, end := m.held, m.lease, m.end
	m.mu.Unlock()
	if len(held) == 0 {
		return ErrNotHeld
	}
	lost := lease.Err()
	end(ErrNotHeld)
	var errs []error
	var left []Locker
	for i := len(held) - 1; i >= 0; i-- {
		err := held[i].Unlock(ctx)
		if err != nil && !lostOrNotHeld(err) {
			left = append([]Locker{held[i]}, left...)
		}
		errs = append(errs, err)
	}
	m.mu.Lock()
	m.held = left
	m.mu.Unlock()
	if errors.Is(lost, ErrLost) {
		errs = append(errs, lost)
	}
	return joinUnique(errs)
}

// Held reports whether the multi-lock holds every part (its lease is live).
func (m *MultiLock) Held() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.held) > 0 && m.lease.Err() == nil
}

// unlockAll releases taken in reverse order, on a ctx detached from ctx's
// cancellation (a partial acquisition is always given back).
func unlockAll(ctx context.Context, taken []Locker) error {
	dctx := context.WithoutCancel(ctx)
	var errs []error
	for i := len(taken) - 1; i >= 0; i-- {
		if err := taken[i].Unlock(dctx); err != nil && !lostOrNotHeld(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func lostOrNotHeld(err error) bool {
	return errors.Is(err, ErrLost) || errors.Is(err, ErrNotHeld)
}

// joinUnique joins the non-nil errors, each message once (a lost part's
// error is both its Unlock's and the lease's).
func joinUnique(errs []error) error {
	var out []error
	seen := map[string]bool{}
	for _, e := range errs {
		if e != nil && !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return errors.Join(out...)
}
