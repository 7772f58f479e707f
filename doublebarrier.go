package baton

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/telemetry"
)

// readyName is the node the n-th participant creates to open a double
// barrier (as in the seeds and Curator's DistributedDoubleBarrier).
const readyName = "ready"

// DoubleBarrier synchronises the start and the end of a computation among n
// participants: Enter returns once n have entered, Leave returns once every
// participant has left. It is the seeds' (and ZooKeeper's recipes') double
// barrier, with the layout of Apache Curator's DistributedDoubleBarrier:
// each participant is an ephemeral node named by a random id under the
// barrier's name, and the n-th to arrive creates the persistent node
// "ready" there; the last to leave removes it.
//
// Each participant records n in its node (a "participants" field beside
// the session's identity). Enter with another n than the first
// participant inside (by creation order) fails with
// ErrParticipantsMismatch, and a node with another n is not counted;
// once all have left, nothing is recorded, so n may change between
// rounds. Peers' participants (Curator, kazoo) record none and count.
//
// A participant whose session ends leaves with it: its node goes, so the
// others' Leave is not held up by a dead process. A DoubleBarrier value is
// one participant; it must not be copied after first use.
//
// With telemetry, Enter is an acquisition (baton.acquire.duration, and
// baton.waiting while fewer than n have entered) and the time from Enter
// to the end of Leave a hold (baton.held, baton.hold.duration), lost if
// the session ends first.
type DoubleBarrier struct {
	s    *Session
	name string
	bad  error // from CleanName: every call returns it
	n    int
	tel  *telemetry.Handle // nil: no telemetry

	mu   sync.Mutex
	node backend.Node
	hold *sessionHold // nil without telemetry
}

// NewDoubleBarrier returns a double barrier for n participants on name (a
// ZooKeeper path, an etcd prefix). It does no I/O. With n < 1, Enter
// returns an error wrapping ErrInvalidParticipants.
func NewDoubleBarrier(s *Session, name string, n int) *DoubleBarrier {
	name, bad := cleanOrKeep(s, name)
	return &DoubleBarrier{s: s, name: name, bad: bad, n: n, tel: s.tel.Handle(recipeDoubleBarrier, name)}
}

// Name is the barrier's name on the store.
func (d *DoubleBarrier) Name() string { return d.name }

func (d *DoubleBarrier) readyPath() string { return backend.Join(d.name, readyName) }

// Enter joins the barrier and returns nil once n participants have entered.
// Enter on a participant that has entered already returns nil at once.
//
// If ctx ends first, our node is removed and ctx.Err() is returned. If the
// session is lost, Enter returns an error satisfying IsSessionGone.
func (d *DoubleBarrier) Enter(ctx context.Context) (err error) {
	if d.bad != nil {
		return d.bad
	}
	a := d.tel.StartAcquire(ctx)
	if a != nil {
		defer func() { a.EndWait(outcomeOf(err), err) }()
	}
	if d.n < 1 {
		return fmt.Errorf("%w: double barrier %s with %d participants", ErrInvalidParticipants, d.name, d.n)
	}
	d.mu.Lock()
	entered := d.node.Path != ""
	d.mu.Unlock()
	if entered {
		return nil
	}
	if err := d.s.Err(); err != nil {
		return err
	}
	c := d.s.conn
	// A participant is a random UUID, as Curator names it.
	me, err := c.Create(ctx, d.name, uuid.NewString(), withParticipants(d.s.nodeData(), d.n), backend.Ephemeral)
	if err != nil {
		return err
	}
	if err := d.await(ctx, a, c); err != nil {
		removeNode(ctx, c, me)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	d.mu.Lock()
	d.node = me
	d.hold = startSessionHold(ctx, d.s, d.tel, me.Token)
	d.mu.Unlock()
	return nil
}

// await returns once the ready node exists, creating it if we are the n-th.
func (d *DoubleBarrier) await(ctx context.Context, a *telemetry.Acquire, c backend.Conn) error {
	kids, err := c.Children(ctx, d.name)
	if err != nil {
		return err
	}
	// Every participant creates its node before listing, so the last of n
	// to list sees all n.
	count, err := d.countParticipants(ctx, c, kids)
	if err != nil {
		return err
	}
	if count >= d.n {
		_, err := c.Create(ctx, d.name, readyName, nil, 0)
		if err != nil && !errors.Is(err, ErrExists) {
			return err
		}
		return nil
	}
	a.Wait()
	if _, err := c.WaitExists(ctx, d.readyPath()); err != nil {
		return err
	}
	return c.Err()
}

// Leave removes us from the barrier and returns nil once every participant
// has left (or died). As in ZooKeeper's recipe, the lowest participant
// waits for the highest while everyone else, having deleted its node,
// waits for the lowest: each waiter watches one node. The last to leave
// removes the ready node, so the barrier can be used again.
//
// Leave without Enter returns ErrNotHeld. If ctx ends first, our node is
// removed and ctx.Err() is returned. If the session is lost, Leave returns
// an error satisfying IsSessionGone.
func (d *DoubleBarrier) Leave(ctx context.Context) error {
	d.mu.Lock()
	me := d.node
	d.mu.Unlock()
	if me.Path == "" {
		return ErrNotHeld
	}
	c := d.s.conn
	err := d.leave(ctx, c, me)
	if err != nil {
		removeNode(ctx, c, me)
	}
	// Either way we are out of the barrier: the hold ends.
	d.mu.Lock()
	hold := d.hold
	d.hold = nil
	if err == nil {
		d.node = backend.Node{}
	}
	d.mu.Unlock()
	hold.close(d.s)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (d *DoubleBarrier) leave(ctx context.Context, c backend.Conn, me backend.Node) error {
	for {
		kids, err := c.Children(ctx, d.name)
		if err != nil {
			return err
		}
		procs := kids[:0:0]
		for _, k := range kids {
			if k.Name != readyName {
				procs = append(procs, k)
			}
		}
		if len(procs) == 0 {
			break
		}
		mine := indexOf(procs, me)
		var wait backend.Node
		switch {
		case mine == 0 && len(procs) == 1:
			if err := c.Delete(ctx, me); err != nil {
				return err
			}
			continue
		case mine == 0:
			wait = procs[len(procs)-1]
		default:
			if mine > 0 {
				if err := c.Delete(ctx, me); err != nil {
					return err
				}
			}
			wait = procs[0]
		}
		if err := c.WaitGone(ctx, wait); err != nil {
			return err
		}
	}
	_, ready, err := c.Get(ctx, d.readyPath())
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.Delete(ctx, ready)
}
