package baton

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/telemetry"
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
// Delivery is at most once: exactly one consumer gets each item, the one
// whose delete of it (guarded by the item itself) succeeds. An item taken
// by a consumer that then dies is lost with it; use ReliableQueue when
// items must survive their consumer. A Take whose ctx ends is not such a
// loss: it either returns the item or leaves it in the queue (see Take).
//
// A Queue may be used by many goroutines.
type Queue struct {
	s          *Session
	name       string
	bad        error             // from CleanName: every call returns it
	tel        *telemetry.Handle // nil: no telemetry
	cache      itemCache
	contention contention
}

// NewQueue returns a queue on name (a ZooKeeper path, an etcd prefix). It
// does no I/O.
func NewQueue(s *Session, name string) *Queue {
	name, bad := cleanOrKeep(name)
	return &Queue{s: s, name: name, bad: bad, tel: s.tel.Handle(recipeQueue, name)}
}

// Name is the queue's name on the store.
func (q *Queue) Name() string { return q.name }

// Put appends an item carrying data. The item is persistent: it outlives
// the session that put it.
func (q *Queue) Put(ctx context.Context, data []byte) error {
	if q.bad != nil {
		return q.bad
	}
	_, err := q.s.conn.Create(ctx, q.name, KindQueue, data, Sequential)
	return err
}

// Take removes and returns the oldest item, waiting for one as long as ctx
// allows. If ctx ends first it returns ctx.Err() and takes nothing; if the
// session is lost, an error satisfying IsSessionGone (even if ctx has
// ended too).
//
// A cancelled Take never loses an item: if ctx ends before Take sent the
// delete of an item, the item stays in the queue; once the delete is sent,
// Take waits for its outcome (bounded by the session's TTL, whatever ctx
// says) and returns the item it removed, with a nil error, even though
// ctx has ended meanwhile. Only a connection lost with the delete's reply
// in flight leaves the outcome unknown: Take then returns an error (ctx's,
// if it has ended) and the item may be gone, taken by nobody, as with a
// consumer that dies holding it.
func (q *Queue) Take(ctx context.Context) ([]byte, error) {
	for {
		data, kids, err := q.take(ctx)
		if err == nil {
			return data, nil // taken, even if ctx ended meanwhile
		}
		if !errors.Is(err, ErrEmpty) || ctx.Err() != nil {
			return nil, takeErr(ctx, q.s, err)
		}
		if err := q.s.conn.WaitChildren(ctx, q.name, kids); err != nil {
			return nil, takeErr(ctx, q.s, err)
		}
	}
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

// Poll removes and returns the oldest item, or returns ErrEmpty at once if
// the queue is empty.
func (q *Queue) Poll(ctx context.Context) ([]byte, error) {
	data, _, err := q.take(ctx)
	if err != nil && !errors.Is(err, ErrEmpty) {
		return nil, takeErr(ctx, q.s, err)
	}
	return data, err
}

// take removes the oldest item it can. It keeps the listing it took
// between calls and lists again only when that runs out or an item in it
// was taken by someone else (as kazoo does): a consumer that walked a stale
// listing would trail the others forever. ErrEmpty comes with the listing
// that had nothing to take.
func (q *Queue) take(ctx context.Context) ([]byte, []Node, error) {
	if q.bad != nil {
		return nil, nil, q.bad
	}
	for {
		k, ok := q.cache.pop()
		if !ok {
			kids, err := q.s.conn.Children(ctx, q.name)
			if err != nil {
				return nil, nil, err
			}
			items := onlyKind(kids, KindQueue)
			q.tel.QueueDepth(len(items))
			if len(items) == 0 {
				return nil, kids, ErrEmpty
			}
			i := q.contention.start(len(items))
			q.cache.fill(items[i+1:])
			k = items[i]
		}
		data, got, err := q.takeOne(ctx, k, q.tel)
		if got || err != nil {
			q.contention.ok()
			return data, nil, err
		}
		q.contention.hit()
		q.cache.fill(nil)
	}
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

// takeOne tries to remove item k. got is false when another consumer took
// it first.
func (q *Queue) takeOne(ctx context.Context, k Node, tel *telemetry.Handle) (data []byte, got bool, err error) {
	c := q.s.conn
	data, n, err := c.Get(ctx, k.Path)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	// Delete is nil for a missing node, so it cannot say who removed the
	// item; a delete guarded by the item itself can: ErrGuard means
	// another consumer was first.
	//
	// Once sent, the delete may be applied whatever ctx does now: wait
	// for its reply on a context ctx cannot cancel, or an item removed
	// while ctx ended would be returned to nobody.
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.s.TTL())
	defer cancel()
	err = c.Commit(dctx, n, Op{Kind: OpDelete, Node: n})
	if errors.Is(err, ErrGuard) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if tel != nil && !n.Created.IsZero() {
		tel.QueueOldest(time.Since(n.Created))
	}
	return data, true, nil
}

// Peek returns the oldest item's data without removing it, or ErrEmpty.
func (q *Queue) Peek(ctx context.Context) ([]byte, error) {
	if q.bad != nil {
		return nil, q.bad
	}
	return peek(ctx, q.s.conn, q.name)
}

// Len returns the number of items in the queue.
func (q *Queue) Len(ctx context.Context) (int, error) {
	if q.bad != nil {
		return 0, q.bad
	}
	n, err := queueLen(ctx, q.s.conn, q.name)
	if err == nil {
		q.tel.QueueDepth(n)
	}
	return n, err
}

func queueLen(ctx context.Context, c Conn, dir string) (int, error) {
	kids, err := c.Children(ctx, dir)
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
	for _, k := range onlyKind(kids, KindQueue) {
		data, _, err := c.Get(ctx, k.Path)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		return data, err
	}
	return nil, ErrEmpty
}

// onlyKind returns the nodes of one kind, in order.
func onlyKind(kids []Node, kind string) []Node {
	var out []Node
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
	items []Node
}

func (c *itemCache) pop() (Node, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.items) == 0 {
		return Node{}, false
	}
	n := c.items[0]
	c.items = c.items[1:]
	return n, true
}

func (c *itemCache) fill(items []Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items = append([]Node(nil), items...)
}
