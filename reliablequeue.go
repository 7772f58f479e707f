package baton

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/telemetry"
)

// claimsName is the directory under a ReliableQueue's name holding one
// ephemeral claim node per item being worked on.
const claimsName = "claims"

// ReliableQueue is a FIFO queue with at-least-once delivery. Items are laid
// out as in Queue (persistent sequential qn-<seq> nodes). A consumer claims
// an item by creating the ephemeral node claims/<item name>, in a commit
// guarded by the item; only one claim can exist per item, and the item stays in the queue until the claimant
// acknowledges it with Ack, which deletes the item and the claim atomically
// (guarded by the claim). If the claimant dies first, its claim goes with
// its session and the item is handed to another consumer: nothing is lost,
// but an item can be delivered more than once.
//
// A ReliableQueue may be used by many goroutines.
type ReliableQueue struct {
	s          *Session
	name       string
	bad        error             // from CleanName: every call returns it
	tel        *telemetry.Handle // nil: no telemetry
	cache      itemCache
	contention contention
	claims     string // the claims directory if not NAME/claims
}

// Item is one item handed out by a ReliableQueue, claimed until Ack or
// Release.
type Item struct {
	// Data is the item's payload.
	Data []byte
	// Node is the item's node on the store.
	Node backend.Node

	claim backend.Node
}

// NewReliableQueue returns a reliable queue on name (a ZooKeeper path, an
// etcd prefix). It does no I/O.
func NewReliableQueue(s *Session, name string) *ReliableQueue {
	name, bad := cleanOrKeep(s, name)
	return &ReliableQueue{s: s, name: name, bad: bad, tel: s.tel.Handle(recipeReliableQueue, name)}
}

// Name is the queue's name on the store.
func (q *ReliableQueue) Name() string { return q.name }

func (q *ReliableQueue) claimsDir() string {
	if q.claims != "" {
		return q.claims
	}
	return backend.Join(q.name, claimsName)
}

// Put appends an item carrying data. The item is persistent.
func (q *ReliableQueue) Put(ctx context.Context, data []byte) error {
	if q.bad != nil {
		return q.bad
	}
	_, err := q.s.conn.Create(ctx, q.name, backend.KindQueue, data, backend.Sequential)
	return err
}

// Take claims the oldest unclaimed item and returns it, waiting for one as
// long as ctx allows. The item stays in the queue, claimed by our session,
// until Ack (done) or Release (give it back). If ctx ends first Take
// returns ctx.Err() and claims nothing; if the session is lost, an error
// satisfying IsSessionGone (even if ctx has ended too).
//
// A cancelled Take never strands an item: if ctx ends before Take sent
// its claim, nothing is claimed; once the claim is sent, Take waits for
// its outcome (bounded by the session's TTL, whatever ctx says) and
// returns the item it claimed, with a nil error, even though ctx has
// ended meanwhile. (A claim left behind would hide the item from every
// other consumer for as long as our session lives.)
func (q *ReliableQueue) Take(ctx context.Context) (*Item, error) {
	c := q.s.conn
	for {
		it, kids, claims, err := q.take(ctx)
		if err == nil {
			return it, nil // claimed, even if ctx ended meanwhile
		}
		if !errors.Is(err, ErrEmpty) || ctx.Err() != nil {
			return nil, takeErr(ctx, q.s, err)
		}
		// Wake on a new item or on a claim going (its consumer acked or
		// died).
		if err := waitEither(ctx, c, q.name, kids, q.claimsDir(), claims); err != nil {
			return nil, takeErr(ctx, q.s, err)
		}
	}
}

// Poll claims the oldest unclaimed item, or returns ErrEmpty at once if
// there is none.
func (q *ReliableQueue) Poll(ctx context.Context) (*Item, error) {
	it, _, _, err := q.take(ctx)
	if err != nil && !errors.Is(err, ErrEmpty) {
		return nil, takeErr(ctx, q.s, err)
	}
	return it, err
}

// take claims the oldest item it can, keeping its listing between calls
// as Queue.take does and listing again when it runs out or an item in it
// was claimed or taken meanwhile. ErrEmpty comes with the listings of items
// and claims that had nothing to take.
func (q *ReliableQueue) take(ctx context.Context) (*Item, []backend.Node, []backend.Node, error) {
	if q.bad != nil {
		return nil, nil, nil, q.bad
	}
	c := q.s.conn
	for {
		k, ok := q.cache.pop()
		if !ok {
			kids, err := c.Children(ctx, q.name)
			if err != nil {
				return nil, nil, nil, err
			}
			// Listed after the items, so a claim released in between
			// (its item acked) makes us find the item gone, never miss
			// a live claim.
			claims, err := c.Children(ctx, q.claimsDir())
			if err != nil {
				return nil, nil, nil, err
			}
			claimed := make(map[string]bool, len(claims))
			for _, cl := range claims {
				claimed[cl.Name] = true
			}
			var free []backend.Node
			for _, k := range onlyKind(kids, backend.KindQueue) {
				if !claimed[k.Name] {
					free = append(free, k)
				}
			}
			q.tel.QueueDepth(len(free))
			if len(free) == 0 {
				return nil, kids, claims, ErrEmpty
			}
			i := q.contention.start(len(free))
			q.cache.fill(free[i+1:])
			k = free[i]
		}
		it, err := q.claim(ctx, k)
		if it != nil || err != nil {
			q.contention.ok()
			return it, nil, nil, err
		}
		// Claimed or acked by another consumer since we listed: our
		// listing is stale, and others are at the head with us.
		q.contention.hit()
		q.cache.fill(nil)
	}
}

// claim tries to claim item k. Without an item or error, someone else has
// claimed it, or it is gone (acked).
func (q *ReliableQueue) claim(ctx context.Context, k backend.Node) (*Item, error) {
	c := q.s.conn
	// The claim is created only while the item exists, so a claim never
	// outlives an acked item, and a consumer behind others in the queue
	// skips a taken item in one request.
	// Owner marks the claim as ours: a backend that cannot learn its Token
	// from the commit still tells it from another consumer's later claim
	// of the same item (etcd compares the owning lease).
	cl := backend.Node{Path: backend.Join(q.claimsDir(), k.Name), Name: k.Name, Kind: k.Name, Owner: q.s.ID()}
	// Once sent, the claim may be made whatever ctx does now: see it
	// through on a context ctx cannot cancel.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.s.TTL())
	defer cancel()
	err := c.Commit(ctx, backend.Node{Path: k.Path, Name: k.Name, Kind: k.Kind, Token: k.Token},
		backend.Op{Kind: backend.OpCreate, Dir: q.claimsDir(), Name: k.Name, Flags: backend.Ephemeral})
	if errors.Is(err, backend.ErrGuard) || errors.Is(err, ErrExists) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Only the claimant acks, so the item is still there, unless a
	// consumer that does not honour claims (etcd's recipe.PriorityQueue)
	// took it: then it is not ours to have.
	data, n, err := c.Get(ctx, k.Path)
	if err != nil || n.Token != k.Token && k.Token != 0 {
		removeNode(ctx, c, cl)
		if err == nil || errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	if q.tel != nil && !n.Created.IsZero() {
		q.tel.QueueOldest(time.Since(n.Created))
	}
	// The name and kind the listing gave: a backend whose items are not
	// direct children of the queue (etcd's priority items,
	// NAME/<priority>/<seq>) names them relative to the queue.
	n.Name, n.Kind = k.Name, k.Kind
	return &Item{Data: data, Node: n, claim: cl}, nil
}

// Ack removes a taken item from the queue for good, together with its
// claim, in one commit guarded by the claim. If the claim is gone (our
// session ended, so the item may be with another consumer now) Ack removes
// nothing and returns an error wrapping ErrLost. If the item is gone while
// the claim is not (a consumer that does not honour claims, such as etcd's
// recipe.PriorityQueue or `etcdctl del`, took it) Ack removes the claim and
// returns an error wrapping ErrLost and ErrRevoked: the item was delivered
// to that other consumer.
func (q *ReliableQueue) Ack(ctx context.Context, it *Item) error {
	err := q.s.conn.Commit(ctx, it.claim,
		backend.Op{Kind: backend.OpDelete, Node: it.Node},
		backend.Op{Kind: backend.OpDelete, Node: it.claim})
	if errors.Is(err, backend.ErrGuard) {
		return fmt.Errorf("%w: claim on %s: %w", ErrLost, it.Node.Path, err)
	}
	if errors.Is(err, ErrNotFound) {
		// A claim left behind would hide a later item of the same name
		// (etcd reuses a priority item's key once its queue is empty).
		if derr := q.s.conn.Delete(ctx, it.claim); derr != nil {
			return derr
		}
		return fmt.Errorf("%w: %s taken by another consumer: %w", ErrLost, it.Node.Path, ErrRevoked)
	}
	return err
}

// settle removes an item just claimed for a consumer that takes it at
// once (Queue.Take, PriorityQueue.Take): Ack, on a context ctx cannot
// cancel (bounded by the session's TTL), for the item is the caller's
// once claimed, and a claim left behind would hide it from every other
// consumer for as long as our session lives. If the Ack fails otherwise
// than by ErrRevoked (the item went to a consumer that does not know
// claims), settle gives the item back by removing the claim.
func (q *ReliableQueue) settle(ctx context.Context, it *Item) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.s.TTL())
	defer cancel()
	err := q.Ack(ctx, it)
	if err != nil && !errors.Is(err, ErrRevoked) && q.s.Err() == nil {
		_ = q.Release(ctx, it)
	}
	return err
}

// Release gives a taken item back to the queue unacknowledged, for another
// consumer (or us) to take again.
func (q *ReliableQueue) Release(ctx context.Context, it *Item) error {
	return q.s.conn.Delete(ctx, it.claim)
}

// Peek returns the oldest item's data without claiming or removing it, or
// ErrEmpty. The item may be claimed by a consumer.
func (q *ReliableQueue) Peek(ctx context.Context) ([]byte, error) {
	if q.bad != nil {
		return nil, q.bad
	}
	return peek(ctx, q.s.conn, q.name)
}

// Len returns the number of items in the queue, claimed or not.
func (q *ReliableQueue) Len(ctx context.Context) (int, error) {
	if q.bad != nil {
		return 0, q.bad
	}
	return queueLen(ctx, q.s.conn, q.name)
}

// waitEither returns once the children of dirA differ from a or those of
// dirB differ from b, whichever comes first.
func waitEither(ctx context.Context, c backend.Conn, dirA string, a []backend.Node, dirB string, b []backend.Node) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- c.WaitChildren(wctx, dirA, a) }()
	go func() { errc <- c.WaitChildren(wctx, dirB, b) }()
	err := <-errc
	cancel()
	<-errc
	return err
}
