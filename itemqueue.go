package baton

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/backend"
)

// itemQueue is the engine of PriorityQueue and DelayQueue: items are
// persistent sequential nodes of a parametric kind (PriorityKind,
// DelayKind), delivered in the order that kind gives them, exactly once
// through ReliableQueue's claims (claim, then Ack; take does both at
// once).
type itemQueue struct {
	s    *Session
	name string
	kind string         // KindPriority or KindDelay
	rq   *ReliableQueue // claims, Ack and Release

	mu   sync.Mutex
	seen map[string]time.Time // delay items: when we first listed each (monotonic)
}

// claimsSuffix names the claims directory of a priority or delay queue,
// NAME.claims: beside the queue, not in it, because a child that is no
// item stalls Curator's DistributedDelayQueue (it sorts such a child first
// and waits for a change of children instead of for the next due item).
const claimsSuffix = ".claims"

func newItemQueue(s *Session, name, kind string) *itemQueue {
	return &itemQueue{s: s, name: name, kind: kind, rq: &ReliableQueue{s: s, name: name, claims: name + claimsSuffix},
		seen: make(map[string]time.Time)}
}

// item is one listed item with what its kind says.
type item struct {
	n        backend.Node
	prio     int32
	delayMS  int64 // -1: not known (the due time counts)
	dueMS    int64
	waitLeft time.Duration // > 0: not due yet
}

// list returns the items now deliverable, in order, the listing they
// came from, and how long until the next item not yet due will be (0 if
// none is waiting).
func (q *itemQueue) list(ctx context.Context) (ready, kids []backend.Node, next time.Duration, err error) {
	kids, err = q.s.conn.Children(ctx, q.name)
	if err != nil {
		return nil, nil, 0, err
	}
	now, mono := time.Now(), time.Now()
	var items []item
	q.mu.Lock()
	keep := make(map[string]time.Time, len(q.seen))
	for _, k := range kids {
		it := item{n: k}
		switch q.kind {
		case backend.KindPriority:
			p, ok := backend.ParsePriorityKind(k.Kind)
			if !ok {
				continue
			}
			it.prio = p
		default:
			d, due, ok := backend.ParseDelayKind(k.Kind)
			if !ok {
				continue
			}
			it.delayMS, it.dueMS = d, due
			if d >= 0 {
				// Counted on our own monotonic clock from when we first
				// saw the item, which is after it was put.
				first, ok := q.seen[k.Path]
				if !ok {
					first = mono
				}
				keep[k.Path] = first
				it.waitLeft = time.Duration(d)*time.Millisecond - mono.Sub(first)
			} else {
				// A Curator item: its due time on our clock, as Curator
				// counts it.
				it.waitLeft = time.Duration(due-now.UnixMilli()) * time.Millisecond
			}
		}
		items = append(items, it)
	}
	if q.kind == backend.KindDelay {
		q.seen = keep
	}
	q.mu.Unlock()
	slices.SortStableFunc(items, func(a, b item) int {
		if c := cmp.Compare(a.prio, b.prio); c != 0 {
			return c
		}
		if c := cmp.Compare(a.dueMS, b.dueMS); c != 0 {
			return c
		}
		return cmp.Compare(a.n.Seq, b.n.Seq)
	})
	for _, it := range items {
		if it.waitLeft > 0 {
			if next == 0 || it.waitLeft < next {
				next = it.waitLeft
			}
			continue
		}
		ready = append(ready, it.n)
	}
	return ready, kids, next, nil
}

func (q *itemQueue) put(ctx context.Context, kind string, data []byte) error {
	_, err := q.s.conn.Create(ctx, q.name, kind, data, backend.Sequential)
	return err
}

// take removes and returns the first deliverable item; with wait it waits
// for one as long as ctx allows, else it returns ErrEmpty. It claims the
// item and acknowledges it at once, so that it never takes an item
// another consumer has claimed: a bare guarded delete could not tell.
//
// An item that a consumer outside baton's claims (etcd's
// recipe.PriorityQueue) took between our claim and our Ack was delivered
// to that consumer, not to us: take goes on to the next item.
func (q *itemQueue) take(ctx context.Context, wait bool) ([]byte, error) {
	for {
		it, err := q.claim(ctx, wait)
		if err != nil {
			return nil, err
		}
		err = q.rq.settle(ctx, it)
		if err == nil {
			return it.Data, nil // taken, even if ctx ended meanwhile
		}
		if !retake(ctx, q.s, err) {
			return nil, takeErr(ctx, q.s, err)
		}
	}
}

// claim claims the first deliverable unclaimed item (see ReliableQueue);
// with wait it waits for one as long as ctx allows, else ErrEmpty.
func (q *itemQueue) claim(ctx context.Context, wait bool) (*Item, error) {
	c := q.s.conn
	for {
		ready, kids, next, err := q.list(ctx)
		if err != nil {
			return nil, ctxErr(ctx, err)
		}
		claims, err := c.Children(ctx, q.rq.claimsDir())
		if err != nil {
			return nil, ctxErr(ctx, err)
		}
		claimed := make(map[string]bool, len(claims))
		for _, cl := range claims {
			claimed[cl.Name] = true
		}
		free := 0
		for _, k := range ready {
			if claimed[k.Name] {
				continue
			}
			free++
			it, err := q.rq.claim(ctx, k)
			if err != nil {
				return nil, ctxErr(ctx, err)
			}
			if it != nil {
				return it, nil
			}
		}
		if free > 0 {
			continue
		}
		if !wait {
			return nil, ErrEmpty
		}
		if err := q.wait(ctx, next, func(ctx context.Context) error {
			return waitEither(ctx, c, q.name, kids, q.rq.claimsDir(), claims)
		}); err != nil {
			return nil, err
		}
	}
}

// wait runs w until it returns or, if next > 0, until next has passed
// (the next delayed item is due). It returns ctx's error when ctx ends.
func (q *itemQueue) wait(ctx context.Context, next time.Duration, w func(context.Context) error) error {
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if next > 0 {
		wctx, cancel = context.WithTimeout(ctx, next)
	}
	defer cancel()
	err := w(wctx)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil && errors.Is(err, context.DeadlineExceeded) && wctx.Err() != nil:
		return nil // the next item is due
	}
	return err
}

// length counts the queue's items, due or not, claimed or not.
func (q *itemQueue) length(ctx context.Context) (int, error) {
	kids, err := q.s.conn.Children(ctx, q.name)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range kids {
		if _, ok := backend.ParsePriorityKind(k.Kind); ok && q.kind == backend.KindPriority {
			n++
		}
		if _, _, ok := backend.ParseDelayKind(k.Kind); ok && q.kind == backend.KindDelay {
			n++
		}
	}
	return n, nil
}

// ctxErr returns ctx's error if ctx has ended, else err.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
