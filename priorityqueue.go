package baton

import (
	"context"
	"time"

	"github.com/batonhq/baton/backend"
)

// PriorityQueue is a distributed queue whose items come out lowest
// priority number first, and in the order they were put among equal
// priorities. On ZooKeeper it has Apache Curator's
// DistributedPriorityQueue layout (items "queue-<priority><seq>", data in
// Curator's ItemSerializer framing), so Curator producers and consumers
// share it. On etcd it has the layout of etcd's own recipe.PriorityQueue
// (go.etcd.io/etcd/client/v3/experimental/recipes; items
// "NAME/<priority %05d>/<seq %016d>"), so etcd's Enqueue and Dequeue
// share it; priorities there are 0 to 99999 (see Put), and etcd's
// Dequeue does not honour claims (see Ack).
//
// Every item is delivered exactly once, through ReliableQueue's claims
// (NAME.claims/<item>, ephemeral, created only while the item exists;
// Curator's consumers with lockPath NAME.claims honour them): Claim hands
// an item out until Ack removes it with its claim, so that an item whose
// consumer dies goes back to the queue (at least once processing); Take
// claims and acknowledges at once (at most once processing). Either way
// no two consumers that honour the claims get one item.
//
// A PriorityQueue may be used by many goroutines.
type PriorityQueue struct{ q *itemQueue }

// NewPriorityQueue returns a priority queue on name (a ZooKeeper path, an
// etcd prefix). It does no I/O.
func NewPriorityQueue(s *Session, name string) *PriorityQueue {
	return &PriorityQueue{q: newItemQueue(s, name, backend.KindPriority)}
}

// Name is the queue's name on the store.
func (p *PriorityQueue) Name() string { return p.q.name }

// Put adds an item carrying data with the given priority (lower comes out
// first, as in Curator and etcd's recipe). The item is persistent. On
// etcd the priority must be 0 to 99999 (etcd.MinPriority to
// etcd.MaxPriority; five digits of its key); another is refused with an
// error wrapping ErrInvalidPriority, not clamped.
func (p *PriorityQueue) Put(ctx context.Context, data []byte, priority int32) error {
	return p.q.put(ctx, backend.PriorityKind(priority), data)
}

// Take removes and returns the first item, waiting for one as long as ctx
// allows. If ctx ends first it returns ctx.Err() and takes nothing; if the
// session is lost, an error satisfying IsSessionGone. As with Queue.Take,
// a Take whose ctx ends once its claim is sent sees the claim and the
// removal through and returns the item, so it never loses one, nor
// leaves a claim behind that would hide it.
func (p *PriorityQueue) Take(ctx context.Context) ([]byte, error) { return p.q.take(ctx, true) }

// Poll removes and returns the first item, or ErrEmpty at once.
func (p *PriorityQueue) Poll(ctx context.Context) ([]byte, error) { return p.q.take(ctx, false) }

// Claim claims the first unclaimed item and returns it, waiting for one as
// long as ctx allows; see ReliableQueue.Take. Give it back with Ack (done)
// or Release.
func (p *PriorityQueue) Claim(ctx context.Context) (*Item, error) { return p.q.claim(ctx, true) }

// PollClaim claims the first unclaimed item, or returns ErrEmpty at once.
func (p *PriorityQueue) PollClaim(ctx context.Context) (*Item, error) { return p.q.claim(ctx, false) }

// Ack removes a claimed item for good; see ReliableQueue.Ack. On etcd, a
// consumer of etcd's recipe.PriorityQueue may have taken the item despite
// the claim (it does not know claims): Ack then returns an error wrapping
// ErrLost and ErrRevoked, and the item is that consumer's. Take never
// returns such an item.
func (p *PriorityQueue) Ack(ctx context.Context, it *Item) error { return p.q.rq.Ack(ctx, it) }

// Release gives a claimed item back; see ReliableQueue.Release.
func (p *PriorityQueue) Release(ctx context.Context, it *Item) error { return p.q.rq.Release(ctx, it) }

// Len returns the number of items, claimed or not.
func (p *PriorityQueue) Len(ctx context.Context) (int, error) { return p.q.length(ctx) }

// DelayQueue is a distributed queue whose items are delivered no earlier
// than a delay after they were put, earliest due first. On ZooKeeper it
// has Apache Curator's DistributedDelayQueue layout (items
// "queue-…|<due epoch ms in hex>|<seq>", data in Curator's ItemSerializer
// framing); on etcd items are the keys NAME/dq-<delay ms>-<due ms>-<id>.
// Delivery is exactly once, by Take or by Claim and Ack, as in
// PriorityQueue.
//
// Whose clock counts: an item put by baton records its delay, and a
// consumer counts that delay on its own monotonic clock from the moment it
// first listed the item, which is after the item was put: no two clocks
// are ever compared, so the item is never delivered early, however far
// apart the producer's, the consumer's and the store's clocks are. The
// price is lateness after a consumer starts: a consumer that had not seen
// an item before counts its whole delay from then. The due time in the
// name (the producer's clock plus the delay) is what Curator's consumers
// go by, and for items put by Curator, which record only a due time,
// baton's consumers go by it too, on their own clock, as Curator does.
//
// A DelayQueue may be used by many goroutines.
type DelayQueue struct{ q *itemQueue }

// NewDelayQueue returns a delay queue on name (a ZooKeeper path, an etcd
// prefix). It does no I/O.
func NewDelayQueue(s *Session, name string) *DelayQueue {
	return &DelayQueue{q: newItemQueue(s, name, backend.KindDelay)}
}

// Name is the queue's name on the store.
func (d *DelayQueue) Name() string { return d.q.name }

// Put adds an item carrying data, to be delivered no earlier than delay
// from now (rounded up to a millisecond; negative counts as zero). The
// item is persistent.
func (d *DelayQueue) Put(ctx context.Context, data []byte, delay time.Duration) error {
	delay = max(delay, 0)
	if r := delay % time.Millisecond; r != 0 {
		delay += time.Millisecond - r
	}
	return d.q.put(ctx, backend.DelayKind(delay, time.Now().Add(delay)), data)
}

// Take removes and returns the first due item, waiting for one as long as
// ctx allows; see PriorityQueue.Take.
func (d *DelayQueue) Take(ctx context.Context) ([]byte, error) { return d.q.take(ctx, true) }

// Poll removes and returns the first due item, or ErrEmpty at once.
func (d *DelayQueue) Poll(ctx context.Context) ([]byte, error) { return d.q.take(ctx, false) }

// Claim claims the first due unclaimed item, waiting for one as long as
// ctx allows; see PriorityQueue.Claim.
func (d *DelayQueue) Claim(ctx context.Context) (*Item, error) { return d.q.claim(ctx, true) }

// PollClaim claims the first due unclaimed item, or returns ErrEmpty at
// once.
func (d *DelayQueue) PollClaim(ctx context.Context) (*Item, error) { return d.q.claim(ctx, false) }

// Ack removes a claimed item for good; see ReliableQueue.Ack.
func (d *DelayQueue) Ack(ctx context.Context, it *Item) error { return d.q.rq.Ack(ctx, it) }

// Release gives a claimed item back; see ReliableQueue.Release.
func (d *DelayQueue) Release(ctx context.Context, it *Item) error { return d.q.rq.Release(ctx, it) }

// Len returns the number of items, due or not, claimed or not.
func (d *DelayQueue) Len(ctx context.Context) (int, error) { return d.q.length(ctx) }
