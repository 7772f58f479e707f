package baton

import (
	"context"
	"errors"
)

// Queue is a distributed FIFO queue: each item is a persistent sequential
// node under the queue's name, taken in creation order. On ZooKeeper the
// items are named qn-<seq>, exactly as ZooKeeper's own recipe
// (org.apache.zookeeper.recipes.queue.DistributedQueue) writes them, so Go
// and Java producers and consumers can share a queue.
//
// Delivery is at most once: exactly one consumer gets each item, the one
// whose guarded delete of it succeeds, and an item taken by a consumer that
// then dies is lost with it. Use ReliableQueue when items must survive
// their consumer.
//
// A Queue may be used by many goroutines.
type Queue struct {
	s    *Session
	name string
}

// NewQueue returns a queue on name (a ZooKeeper path, an etcd prefix). It
// does no I/O.
func NewQueue(s *Session, name string) *Queue { return &Queue{s: s, name: name} }

// Name is the queue's name on the store.
func (q *Queue) Name() string { return q.name }

// Put appends an item carrying data. The item is persistent: it outlives
// the session that put it.
func (q *Queue) Put(ctx context.Context, data []byte) error {
	_, err := q.s.conn.Create(ctx, q.name, KindQueue, data, Sequential)
	return err
}

// Take removes and returns the oldest item, waiting for one as long as ctx
// allows. If ctx ends first it returns ctx.Err() and takes nothing; if the
// session is lost, an error satisfying IsSessionGone.
func (q *Queue) Take(ctx context.Context) ([]byte, error) {
	for {
		data, kids, err := q.take(ctx)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, ErrEmpty) {
			return data, err
		}
		if err := q.s.conn.WaitChildren(ctx, q.name, kids); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
	}
}

// Poll removes and returns the oldest item, or returns ErrEmpty at once if
// the queue is empty.
func (q *Queue) Poll(ctx context.Context) ([]byte, error) {
	data, _, err := q.take(ctx)
	return data, err
}

// take tries the items in order until it removes one; ErrEmpty comes with
// the listing that found none.
func (q *Queue) take(ctx context.Context) ([]byte, []Node, error) {
	c := q.s.conn
	kids, err := c.Children(ctx, q.name)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range kids {
		if k.Kind != KindQueue {
			continue
		}
		data, n, err := c.Get(ctx, k.Path)
		if errors.Is(err, ErrNotFound) {
			continue // taken by another consumer
		}
		if err != nil {
			return nil, nil, err
		}
		// The delete is guarded by the item itself: if another consumer
		// removed it first, ErrGuard says so and we try the next.
		err = c.Commit(ctx, n, Op{Kind: OpDelete, Node: n})
		if errors.Is(err, ErrGuard) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		return data, nil, nil
	}
	return nil, kids, ErrEmpty
}

// Peek returns the oldest item's data without removing it, or ErrEmpty.
func (q *Queue) Peek(ctx context.Context) ([]byte, error) {
	return peek(ctx, q.s.conn, q.name)
}

// Len returns the number of items in the queue.
func (q *Queue) Len(ctx context.Context) (int, error) {
	kids, err := q.s.conn.Children(ctx, q.name)
	if err != nil {
		return 0, err
	}
	return countKind(kids, KindQueue), nil
}

func peek(ctx context.Context, c Conn, dir string) ([]byte, error) {
	kids, err := c.Children(ctx, dir)
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		if k.Kind != KindQueue {
			continue
		}
		data, _, err := c.Get(ctx, k.Path)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		return data, err
	}
	return nil, ErrEmpty
}
