package baton

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton/internal/telemetry"
)

// Barrier holds clients back until it is removed: the seeds' barrier. The
// barrier is one persistent node at its name; Wait returns once that node is
// gone. It has the layout of Apache Curator's DistributedBarrier, so Go and
// Java clients can share one barrier on ZooKeeper.
//
// The node is persistent: a barrier outlives the session that set it. Its
// name follows CleanName's rule, as every recipe's does.
//
// With telemetry, each Wait is a baton.acquire.duration measurement (outcome
// acquired once the barrier is down) and counts in baton.waiting while the
// barrier is up; a barrier holds nothing, so it reports no hold.
type Barrier struct {
	s    *Session
	name string
	tel  *telemetry.Handle // nil: no telemetry
	bad  error             // from CleanName: every call returns it
}

// NewBarrier returns a barrier at name (a ZooKeeper path, an etcd key). It
// does no I/O.
func NewBarrier(s *Session, name string) *Barrier {
	name, bad := cleanOrKeep(s, name)
	return &Barrier{s: s, name: name, bad: bad, tel: s.tel.Handle(recipeBarrier, name)}
}

// Name is the barrier node's name on the store.
func (b *Barrier) Name() string { return b.name }

// Set raises the barrier by creating its node. Setting a barrier that is
// already up is nil. On ZooKeeper a name whose node has or had children
// (NAME/x was locked, say) is refused with ErrIncompatible: such a node may
// be the container directory the server removes once it is empty, which
// would lower the barrier unseen (Curator's DistributedBarrier takes it
// for a barrier already up). A client cannot tell it from a barrier with
// nodes under it, so Set refuses both; a barrier wants a name of its own.
func (b *Barrier) Set(ctx context.Context) error {
	if b.bad != nil {
		return b.bad
	}
	dir, base, err := splitName(b.name)
	if err != nil {
		return err
	}
	for range 3 { // a directory removed meanwhile: create again
		_, err = b.s.conn.Create(ctx, dir, base, nil, 0)
		if !errors.Is(err, ErrExists) {
			return err
		}
		_, n, gerr := b.s.conn.Get(ctx, b.name)
		switch {
		case errors.Is(gerr, ErrNotFound):
			continue
		case gerr != nil:
			return gerr
		case n.Dir:
			return fmt.Errorf("%w: barrier %s: the name is (or was) the directory of other nodes (a lock or another recipe under it), which ZooKeeper removes once it is empty; give the barrier a name of its own", ErrIncompatible, b.name)
		}
		return nil
	}
	return err
}

// Remove lowers the barrier, releasing every waiter. Removing a barrier
// that is not up is nil.
func (b *Barrier) Remove(ctx context.Context) error {
	if b.bad != nil {
		return b.bad
	}
	_, n, err := b.s.conn.Get(ctx, b.name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return b.s.conn.Delete(ctx, n)
}

// IsSet reports whether the barrier is up (its node exists).
func (b *Barrier) IsSet(ctx context.Context) (bool, error) {
	if b.bad != nil {
		return false, b.bad
	}
	_, _, err := b.s.conn.Get(ctx, b.name)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Wait returns nil once the barrier is down (at once if it is not up, as
// Curator's DistributedBarrier does: IsSet tells the two apart). If
// ctx ends first it returns ctx.Err(); if the session is lost, an error
// satisfying IsSessionGone. It watches the barrier node alone.
func (b *Barrier) Wait(ctx context.Context) (err error) {
	if b.bad != nil {
		return b.bad
	}
	a := b.tel.StartAcquire(ctx)
	if a != nil {
		defer func() { a.EndWait(outcomeOf(err), err) }()
	}
	_, n, err := b.s.conn.Get(ctx, b.name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	a.Wait()
	if err := b.s.conn.WaitGone(ctx, n); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	return nil
}

// splitName splits a node name into its parent and last element.
func splitName(name string) (dir, base string, err error) {
	i := strings.LastIndexByte(name, '/')
	base = name[i+1:]
	if base == "" {
		return "", "", fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	switch {
	case i < 0:
		return "", base, nil
	case i == 0:
		return "/", base, nil
	}
	return name[:i], base, nil
}
