package baton

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/batonhq/baton/backend"
)

// Queue is a distributed FIFO queue: each item is a persistent sequential
// node under the queue's name, taken in creation order. On ZooKeeper the
// items are named qn-<seq>, exactly as ZooKeeper's own recipe
// (org.apache.zookeeper.recipes.queue.DistributedQueue) writes them, so Go
// and Java producers and consumers can share a queue.
//
// Items are handed out in order: a lone consumer takes them strictly
// oldest first; consumers that collide on the oldest items spread over the
// first few, so with many consumers an item may be taken just before an
// older one that another consumer is taking.
//
// Delivery is at most once: exactly one consumer gets each item. Take
// claims the item as ReliableQueue does (the ephemeral node
// NAME/claims/<item>, made in a commit guarded by the item) and at once
// removes it with its claim, so a Take never gets an item that a
// ReliableQueue consumer, or `baton queue take` (which removes an item
// only once it has written it), has claimed: every item reaches one of
// them, whichever they mix. (ZooKeeper's own DistributedQueue does not
// know claims; an item it deletes under a claim is its, and Take goes on
// to the next.) An item taken by a consumer that then dies is lost with
// it; use Claim and Ack (or ReliableQueue) when items must survive their
// consumer. A Take
// whose ctx ends is not such a loss: it either returns the item or leaves
// it in the queue (see Take).
//
// A Queue may be used by many goroutines.
type Queue struct {
	rq *ReliableQueue // the items and their claims, with the queue's telemetry
}

// NewQueue returns a queue on name (a ZooKeeper path, an etcd prefix). It
// does no I/O.
func NewQueue(s *Session, name string) *Queue {
	name, bad := cleanOrKeep(s, name)
	return &Queue{rq: &ReliableQueue{s: s, name: name, bad: bad, tel: s.tel.Handle(recipeQueue, name)}}
}

// Name is the queue's name on the store.
func (q *Queue) Name() string { return q.rq.name }

// Put appends an item carrying data. The item is persistent: it outlives
// the session that put it.
func (q *Queue) Put(ctx context.Context, data []byte) error { return q.rq.Put(ctx, data) }

// Take removes and returns the oldest unclaimed item, waiting for one as
// long as ctx allows. If ctx ends first it returns ctx.Err() and takes
// nothing; if the session is lost, an error satisfying IsSessionGone
// (even if ctx has ended too).
//
// A cancelled Take never loses an item: if ctx ends before Take sent the
// claim of an item, the item stays in the queue; once the claim is sent,
// Take sees it and the removal through (bounded by the session's TTL,
// whatever ctx says) and returns the item, with a nil error, even though
// ctx has ended meanwhile. Only a connection lost with the removal's
// reply in flight leaves the outcome unknown: Take then returns an error
// (ctx's, if it has ended) and the item may be gone, taken by nobody, as
// with a consumer that dies holding it.
func (q *Queue) Take(ctx context.Context) ([]byte, error) { return q.take(ctx, q.rq.Take) }

// Poll removes and returns the oldest unclaimed item, or returns ErrEmpty
// at once if there is none.
func (q *Queue) Poll(ctx context.Context) ([]byte, error) { return q.take(ctx, q.rq.Poll) }

// Claim claims the oldest unclaimed item and returns it, waiting for one
// as long as ctx allows, for at-least-once processing: see
// ReliableQueue.Take. Give it back with Ack (done) or Release; if our
// session ends first, the item goes back to the queue.
func (q *Queue) Claim(ctx context.Context) (*Item, error) { return q.rq.Take(ctx) }

// PollClaim claims the oldest unclaimed item, or returns ErrEmpty at once.
func (q *Queue) PollClaim(ctx context.Context) (*Item, error) { return q.rq.Poll(ctx) }

// Ack removes a claimed item for good; see ReliableQueue.Ack.
func (q *Queue) Ack(ctx context.Context, it *Item) error { return q.rq.Ack(ctx, it) }

// Release gives a claimed item back; see ReliableQueue.Release.
func (q *Queue) Release(ctx context.Context, it *Item) error { return q.rq.Release(ctx, it) }

// take claims an item with claim and removes it at once.
func (q *Queue) take(ctx context.Context, claim func(context.Context) (*Item, error)) ([]byte, error) {
	for {
		it, err := claim(ctx)
		if err != nil {
			return nil, err
		}
		err = q.rq.settle(ctx, it)
		if err == nil {
			return it.Data, nil // taken, even if ctx ended meanwhile
		}
		if !retake(ctx, q.rq.s, err) {
			return nil, takeErr(ctx, q.rq.s, err)
		}
	}
}

// retake reports whether a take whose claimed item could not be removed
// (settle's err) goes on to claim another: when a consumer that does not
// know claims took the item under ours (ErrRevoked: it was delivered, to
// that consumer), or when our claim vanished (ErrGuard: the item was not
// removed, and stays for another consumer). A claim vanishes when our
// session ends, and the server may have ended it before this client
// learns so: the next claim then fails with the session's error, which is
// what the consumer must see.
func retake(ctx context.Context, s *Session, err error) bool {
	if ctx.Err() != nil || s.Err() != nil {
		return false
	}
	return errors.Is(err, ErrRevoked) || errors.Is(err, backend.ErrGuard)
}

// takeErr is what a Take that failed with err returns: the session's
// loss first, even when ctx has ended too (the consumer must learn that
// it has to start over), then ctx's error, then err.
func takeErr(ctx context.Context, s *Session, err error) error {
	switch {
	case IsSessionGone(err):
		return err
	case s.Err() != nil:
		return s.Err()
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}

// contention remembers how often a consumer lately found the item it tried
// taken by another, so that consumers contending for the head of a queue
// spread over its first few items instead of colliding again and again. A
// consumer that meets no contention takes items strictly in order.
type contention struct{ n atomic.Int32 }

// maxSpread bounds the spread to the first 2^maxSpread items.
const maxSpread = 4

func (c *contention) hit() {
	if c.n.Load() < maxSpread {
		c.n.Add(1)
	}
}

func (c *contention) ok() {
	if c.n.Load() > 0 {
		c.n.Add(-1)
	}
}

// start picks where to start in a fresh listing of n items: the first
// without contention, else a random one of the first 2^contention.
func (c *contention) start(n int) int {
	k := c.n.Load()
	if k <= 0 {
		return 0
	}
	return rand.IntN(min(n, 1<<k))
}

// Peek returns the oldest item's data without removing it, or ErrEmpty.
func (q *Queue) Peek(ctx context.Context) ([]byte, error) { return q.rq.Peek(ctx) }

// Len returns the number of items in the queue.
func (q *Queue) Len(ctx context.Context) (int, error) {
	n, err := q.rq.Len(ctx)
	if err == nil {
		q.rq.tel.QueueDepth(n)
	}
	return n, err
}

func queueLen(ctx context.Context, c backend.Conn, dir string) (int, error) {
	kids, err := c.Children(ctx, dir)
	if err != nil {
		return 0, err
	}
	return countKind(kids, backend.KindQueue), nil
}

func peek(ctx context.Context, c backend.Conn, dir string) ([]byte, error) {
	kids, err := c.Children(ctx, dir)
	if err != nil {
		return nil, err
	}
	for _, k := range onlyKind(kids, backend.KindQueue) {
		data, _, err := c.Get(ctx, k.Path)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		return data, err
	}
	return nil, ErrEmpty
}

// onlyKind returns the nodes of one kind, in order.
func onlyKind(kids []backend.Node, kind string) []backend.Node {
	var out []backend.Node
	for _, k := range kids {
		if k.Kind == kind {
			out = append(out, k)
		}
	}
	return out
}

// itemCache holds the items of a queue's last listing not yet tried, so
// that a consumer lists the queue once per batch rather than once per item.
type itemCache struct {
	mu    sync.Mutex
	items []backend.Node
}

func (c *itemCache) pop() (backend.Node, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.items) == 0 {
		return backend.Node{}, false
	}
	n := c.items[0]
	c.items = c.items[1:]
	return n, true
}

func (c *itemCache) fill(items []backend.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items = append([]backend.Node(nil), items...)
}
