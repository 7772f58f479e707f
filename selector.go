package baton

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/backend"
)

// LeaderSelector is leader election in Apache Curator's LeaderSelector
// layout, with its auto-requeue: each candidate is a Mutex contender
// (_c_<uuid>-lock-<seq> on ZooKeeper) whose node carries the candidate's
// id, the holder of the lock leads, and Run campaigns again every time a
// leadership ends. Curator's LeaderSelector and kazoo's Election on the
// same path take part in the same election.
//
// Election or LeaderSelector: both take turns leading with Run, and
// cannot share a name. Use LeaderSelector when the name is shared with
// Curator's LeaderSelector or kazoo's Election (the lock layout), or when
// each turn is a piece of work handed to fn with its lease; otherwise
// Election (LeaderLatch's layout, with Campaign, Proclaim and Resign).
//
// Leadership here is something you are given to do work: fn runs while we
// lead, and the leadership ends when fn returns. Observe and Leader are
// Election's on the same name:
// they read lock-layout candidates too, and Observe reports "no leader"
// (an event without a Node) as soon as the leader's node goes.
//
// A LeaderSelector value is one candidate; it must not be copied after
// first use, and Run and Lead must not be called on it concurrently.
//
// With telemetry it reports as recipe leader_selector: each turn's wait
// (baton.acquire.duration, baton.waiting), each leadership as a hold
// (baton.held, baton.hold.duration, baton.lost), baton.leader (0 while
// campaigning, 1 while leading) and baton.leader.transitions.
type LeaderSelector struct {
	m *Mutex
	e *Election
}

// NewLeaderSelector returns a candidate on name (a ZooKeeper path, an
// etcd prefix) whose node carries id (Curator's participant id; nil for
// the session's identity). It does no I/O.
func NewLeaderSelector(s *Session, name string, id []byte) *LeaderSelector {
	m := NewMutex(s, name)
	m.tel = s.tel.Handle(recipeSelector, name)
	if id != nil {
		m.data = append([]byte{}, id...)
	}
	return &LeaderSelector{m: m, e: NewElection(s, name)}
}

// Name is the election's name on the store.
func (l *LeaderSelector) Name() string { return l.m.name }

// Lead waits until we lead, runs fn while we do, and gives the leadership
// up when fn returns: one turn, no requeue. fn's ctx is cancelled as soon
// as the leadership is lost (the session lost or our node gone), with the
// lease's error as its cause; the lease (fencing token, Done) is passed to
// fn. Lead returns nil when fn returned nil while leading, the lease's
// error (wrapping ErrLost, joined with fn's error if any) after a loss,
// fn's error, or the error of the wait (ctx's, the session's). On a name
// where an Election has a candidate (its LeaderLatch layout does not wait
// for ours, so both would lead), Lead gives the turn back before fn runs
// and returns an error wrapping ErrIncompatible, as Election.Campaign
// refuses a name holding lock-layout candidates.
func (l *LeaderSelector) Lead(ctx context.Context, fn func(ctx context.Context, lease *Lease) error) error {
	l.m.tel.Candidate()
	lease, err := l.m.Lock(ctx)
	if err != nil {
		return err
	}
	if err := l.checkNoLatch(ctx); err != nil {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer rcancel()
		if uerr := l.m.Unlock(rctx); uerr != nil && !lostOrNotHeld(uerr) {
			return errors.Join(err, uerr)
		}
		return err
	}
	fctx, cancel := lease.Context(ctx)
	ferr := fn(fctx, lease)
	cancel()
	lost := lease.Err()
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	uerr := l.m.Unlock(rctx)
	rcancel()
	switch {
	case errors.Is(lost, ErrLost):
		return errors.Join(lost, ferr)
	case ferr != nil:
		return ferr
	case uerr != nil && !errors.Is(uerr, ErrLost):
		return uerr
	}
	return nil
}

// checkNoLatch refuses to lead beside an Election: our lock node orders
// only lock nodes, so an Election's latch candidate, which may lead, is
// not waited for. It looks once we hold the lock; an Election that joins
// later sees our node (and waits, or refuses), so one of the two always
// sees the other.
func (l *LeaderSelector) checkNoLatch(ctx context.Context) error {
	kids, err := l.m.s.conn.Children(ctx, l.m.name)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if k.Kind == backend.KindLatch {
			return fmt.Errorf("%w: %s has an Election candidate %s, which would lead beside a LeaderSelector: use one of them per name", ErrIncompatible, l.m.name, k.Name)
		}
	}
	return nil
}

// Run is Curator's LeaderSelector with autoRequeue: it runs Lead again and
// again, campaigning anew after every turn, whether fn returned or the
// leadership was lost (our node deleted), until ctx ends. Each turn joins
// the back of the line, so the candidates take turns. Election.Run is the
// same loop in LeaderLatch's layout; see LeaderSelector for which to use.
//
// Run returns ctx.Err() when ctx ends, fn's error when fn fails while still
// leading, and the session's error once the session is gone (a new session
// is needed to campaign again).
func (l *LeaderSelector) Run(ctx context.Context, fn func(ctx context.Context, lease *Lease) error) error {
	for {
		err := l.Lead(ctx, fn)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case l.m.s.Err() != nil:
			return l.m.s.Err()
		case err != nil && !errors.Is(err, ErrLost):
			return err
		}
	}
}

// Leading reports whether we lead now.
func (l *LeaderSelector) Leading() bool { return l.m.Held() }

// Leader returns the current leader's id and node, or ErrNoLeader when
// nobody leads.
func (l *LeaderSelector) Leader(ctx context.Context) ([]byte, backend.Node, error) {
	return l.e.Leader(ctx)
}

// Observe reports the leader now and every change of leader after that,
// including "nobody leads" (an event without a Node); see
// Election.Observe.
func (l *LeaderSelector) Observe(ctx context.Context) <-chan LeaderEvent {
	return l.e.Observe(ctx)
}
