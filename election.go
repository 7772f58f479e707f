package baton

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/handle"
	"github.com/batonhq/baton/internal/telemetry"
)

// Election is leader election among the clients sharing its name: the
// seeds' herd-free lock used to choose a leader. Each candidate creates an
// ephemeral sequential node carrying its value; the lowest candidate leads,
// and every other one watches only the candidate just before it.
//
// On ZooKeeper the nodes follow Apache Curator's LeaderLatch layout
// (_c_<uuid>-latch-<seq>). On etcd a candidate's key is NAME/latch-<lease>;
// the keys of `etcdctl elect NAME` (NAME/<lease>, the concurrency
// package's election layout) count as candidates too, so it takes part.
//
// Election or LeaderSelector: both choose one leader and, with Run, take
// turns leading; they differ in node layout, and so cannot share a name
// (Campaign refuses a name holding lock-layout candidates). Use Election
// (Campaign, Proclaim, Resign, Observe; Run for turns) unless the name is
// shared with peers in the lock layout, Curator's LeaderSelector or
// kazoo's Election: for those, use LeaderSelector. Election's peers are
// Curator's LeaderLatch and etcdctl elect.
//
// Leadership is confirmed by an ownership check before Campaign returns:
// our node must still exist in the incarnation we created, owned by our live
// session (cf. Curator's double-leader bug CURATOR-696).
//
// An Election value is one candidate; it must not be copied after first use.
type Election struct {
	s    *Session
	name string
	bad  error             // from CleanName: every call returns it
	tel  *telemetry.Handle // nil: no telemetry

	gate handle.Gate // one Campaign at a time on this handle
	held nodeHeld    // our leadership (one level)
}

// LeaderEvent is one observation of an election's leader.
type LeaderEvent struct {
	// Node is the leader's node; its Path is "" when nobody leads.
	Node backend.Node
	// Value is the leader's value as read when the change was seen.
	Value []byte
	// Err is set on the last event only, just before the channel closes:
	// why observing ended.
	Err error
}

// HasLeader reports whether the event names a leader.
func (e LeaderEvent) HasLeader() bool { return e.Node.Path != "" }

// NewElection returns an election on name (a ZooKeeper path, an etcd
// prefix). It does no I/O.
func NewElection(s *Session, name string) *Election {
	name, bad := cleanOrKeep(s, name)
	return &Election{s: s, name: name, bad: bad, tel: s.tel.Handle(recipeElection, name)}
}

// Name is the election's name on the store.
func (e *Election) Name() string { return e.name }

var isCandidate = prevOfKinds(backend.KindLatch, backend.KindLock)

func candidate(n backend.Node) bool { return n.Kind == backend.KindLatch || n.Kind == backend.KindLock }

// Campaign joins the election with value and returns nil once we lead.
// Leadership then lasts until Resign, the loss of our node or the end of the
// session; Lease().Done() signals the end. Campaign while already leading
// proclaims value and returns.
//
// If ctx ends first, our node is removed and ctx.Err() is returned. If the
// session is lost while waiting, Campaign returns promptly with an error
// satisfying IsSessionGone. If the ownership check fails, our node is
// removed and an error wrapping ErrLost is returned. If a lock-layout
// candidate is in line (Curator's LeaderSelector, kazoo's Election, which
// would lead beside us), our node is removed and an error wrapping
// ErrIncompatible is returned.
func (e *Election) Campaign(ctx context.Context, value []byte) error {
	if e.bad != nil {
		return e.bad
	}
	if err := e.gate.Enter(ctx); err != nil {
		return err
	}
	defer e.gate.Leave()
	if _, l, ok := e.held.Current(); ok && l.Err() == nil {
		return e.proclaim(ctx, value)
	}
	if _, err := reenter(ctx, &e.held); err != nil {
		return err
	}
	if err := e.s.Err(); err != nil {
		return err
	}
	if e.tel == nil {
		return e.campaign(ctx, value, nil)
	}
	e.tel.Candidate()
	a := e.tel.StartAcquire(ctx)
	err := e.campaign(ctx, value, a)
	var token int64
	if _, l, ok := e.held.Current(); ok && err == nil {
		token = l.Token()
	}
	a.End(outcomeOf(err), token, err)
	return err
}

// campaign queues our candidate and waits until it leads, reporting to a.
func (e *Election) campaign(ctx context.Context, value []byte, a *telemetry.Acquire) error {
	c := e.s.conn
	me, kids, err := enqueue(ctx, c, e.name, backend.KindLatch, value)
	if err != nil {
		return err
	}
	if err := checkElectionLayout(c, e.name, kids); err != nil {
		removeNode(ctx, c, me)
		return err
	}
	if err := waitTurn(ctx, a, c, e.name, kids, me, isCandidate); err != nil {
		removeNode(ctx, c, me)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if err := confirmOwner(ctx, c, me); err != nil {
		removeNode(ctx, c, me)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}

	// Our node vanishing (deleted by someone else, or the session ended)
	// ends the leadership.
	h := holdNode(e.s, e.tel, a, e.name, me)
	e.held.Take(h, h.lease)
	return nil
}

// confirmOwner checks that me still exists in the incarnation we created,
// owned by our session.
func confirmOwner(ctx context.Context, c backend.Conn, me backend.Node) error {
	_, n, err := c.Get(ctx, me.Path)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: our node %s is gone", ErrLost, me.Path)
	}
	if err != nil {
		return err
	}
	if me.Token != 0 && n.Token != 0 && n.Token != me.Token {
		return fmt.Errorf("%w: our node %s was replaced", ErrLost, me.Path)
	}
	if n.Owner != "" && n.Owner != c.ID() {
		return fmt.Errorf("%w: node %s is owned by session %s, not ours", ErrLost, me.Path, n.Owner)
	}
	return c.Err()
}

// Lease returns the lease of our current leadership, or nil when we do not
// lead. Its Done is closed when the leadership ends (Resign or loss); its
// Key is the election's name.
func (e *Election) Lease() *Lease {
	if _, l, ok := e.held.Current(); ok {
		return l
	}
	return nil
}

// Node returns our candidate node while we lead (or until Resign after a
// loss), and false otherwise.
func (e *Election) Node() (backend.Node, bool) {
	h, _, ok := e.held.Current()
	if !ok {
		return backend.Node{}, false
	}
	return h.node, true
}

// Resign gives up leadership: our lease ends and our node is deleted, so
// the next candidate leads, even when ctx is already done (the delete runs
// detached from ctx, bounded by the session TTL). If the delete fails while
// the session lives, Resign returns its error and goes on deleting the
// node in the background until it is gone or the session ends; calling
// Resign again retries at once. Without a leadership it returns ErrNotHeld (to
// withdraw a Campaign still waiting, cancel its ctx); after a loss, an
// error wrapping ErrLost.
func (e *Election) Resign(ctx context.Context) error {
	return release(ctx, &e.held)
}

// Proclaim replaces our value while we lead, guarded by our node: it is
// applied only if our node still exists. Without a leadership it returns
// ErrNotHeld; if our node is gone, an error wrapping ErrLost (and the lease
// ends).
func (e *Election) Proclaim(ctx context.Context, value []byte) error {
	return e.proclaim(ctx, value)
}

func (e *Election) proclaim(ctx context.Context, value []byte) error {
	h, l, ok := e.held.Current()
	if !ok {
		return ErrNotHeld
	}
	if err := l.Err(); err != nil {
		return err
	}
	err := e.s.conn.Commit(ctx, h.node, backend.Op{Kind: backend.OpSet, Node: h.node, Data: value})
	if errors.Is(err, backend.ErrGuard) {
		err = fmt.Errorf("%w: %w: %w", ErrLost, ErrRevoked, err)
		h.end(err)
	}
	return err
}

// Leader returns the current leader's value and node, or ErrNoLeader when
// nobody leads.
func (e *Election) Leader(ctx context.Context) ([]byte, backend.Node, error) {
	if e.bad != nil {
		return nil, backend.Node{}, e.bad
	}
	const attempts = 8 // the leader may go between listing and reading
	err := ErrNoLeader
	for range attempts {
		kids, lerr := e.s.conn.Children(ctx, e.name)
		if lerr != nil {
			return nil, backend.Node{}, lerr
		}
		i := firstCandidate(kids)
		if i < 0 {
			return nil, backend.Node{}, ErrNoLeader
		}
		var data []byte
		var n backend.Node
		data, n, err = e.s.conn.Get(ctx, kids[i].Path)
		if err == nil {
			return data, n, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, backend.Node{}, err
		}
	}
	return nil, backend.Node{}, err
}

func firstCandidate(kids []backend.Node) int {
	for i, k := range kids {
		if candidate(k) {
			return i
		}
	}
	return -1
}

// Observe reports the leader now and every change of leader after that,
// including "nobody leads" (an event without a Node): as soon as the
// leader's node goes, an event without a Node says so, then the next
// leader is reported once the observer has read it. It watches only the
// current leader's node while there is one. A Proclaim by a leader that
// stays is not a change of leader: Leader reads the latest value.
//
// The channel is closed when ctx ends, the session is lost or the store
// fails a request. The last event before it closes carries the reason in
// Err (ctx's error, the session's, or the store's); it is dropped only if
// ctx has ended and nobody reads it. Observe again to resume.
func (e *Election) Observe(ctx context.Context) <-chan LeaderEvent {
	ch := make(chan LeaderEvent, 1)
	go e.observe(ctx, ch)
	return ch
}

func (e *Election) observe(ctx context.Context, ch chan<- LeaderEvent) {
	defer close(ch)
	err := e.follow(ctx, ch)
	if s := e.s.Err(); s != nil && !IsSessionGone(err) {
		err = s
	}
	if err == nil {
		err = ctx.Err()
	}
	ev := LeaderEvent{Err: err}
	if ctx.Err() == nil {
		ch <- ev // ch is buffered and nothing else sends: the reader gets it
		return
	}
	select {
	case ch <- ev:
	default:
	}
}

// follow sends the leader events on ch until it fails, and says why.
func (e *Election) follow(ctx context.Context, ch chan<- LeaderEvent) error {
	if e.bad != nil {
		return e.bad
	}
	c := e.s.conn
	var last LeaderEvent
	first := true
	send := func(ev LeaderEvent) error {
		if !first && ev.Node.Path == last.Node.Path && ev.Node.Token == last.Node.Token {
			return nil
		}
		first, last = false, ev
		select {
		case ch <- ev:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.Err(); err != nil {
			return err
		}
		kids, err := c.Children(ctx, e.name)
		if err != nil {
			return err
		}
		i := firstCandidate(kids)
		if i < 0 {
			if err := send(LeaderEvent{}); err != nil {
				return err
			}
			if err := c.WaitChildren(ctx, e.name, kids); err != nil {
				return err
			}
			continue
		}
		data, n, err := c.Get(ctx, kids[i].Path)
		if errors.Is(err, ErrNotFound) {
			continue // gone meanwhile: list again
		}
		if err != nil {
			return err
		}
		if err := send(LeaderEvent{Node: n, Value: data}); err != nil {
			return err
		}
		if err := c.WaitGone(ctx, n); err != nil {
			return err
		}
		// The leader's node is gone: nobody leads until the next
		// candidate is read.
		if err := send(LeaderEvent{}); err != nil {
			return err
		}
	}
}

// Run runs fn while we lead, then campaigns again, until ctx ends: the
// behaviour of Curator's LeaderSelector with auto-requeue in LeaderLatch's
// layout (LeaderSelector.Run is the same loop in the lock layout, for
// peers that use it; see Election). fn's ctx is cancelled as soon as the
// leadership is lost (session lost or our node gone), with the lease error
// as its cause. When fn returns, Run resigns, so the next candidate leads.
//
// When we are cut off from the store, the session is given up locally
// before the store can expire it, so fn's ctx is cancelled before another
// candidate can lead. When the store ends the session or deletes our node
// while we are still in contact (an operator's kill, a revoked lease), we
// learn of it from the store at about the time the next candidate does:
// guard the work itself with the lease's fencing token (Lease().Token()).
//
// A cancelled ctx is news that arrives only while the process runs: one
// paused for longer than the TTL (a GC pause, SIGSTOP, a stalled VM) may
// resume with ctx not yet cancelled while another candidate already leads.
// So before each side effect fn must check Valid on the lease of its term
// (take it with Lease() when fn starts), which answers from the clock, or
// pass the lease's token to the resource; a select on ctx.Done() alone is
// not enough. Lease().Jeopardy() warns fn, while it still leads, that
// contact with the store has lapsed.
//
// Run returns ctx.Err() when ctx ends, fn's error when fn fails while still
// leading, and the session's error once the session is gone (a new session
// is needed to campaign again). If fn returns nil, Run campaigns again.
func (e *Election) Run(ctx context.Context, value []byte, fn func(ctx context.Context) error) error {
	for {
		if err := e.Campaign(ctx, value); err != nil {
			if ctx.Err() == nil && errors.Is(err, ErrLost) && e.s.Err() == nil {
				continue // lost during the ownership check: try again
			}
			return err
		}
		l := e.Lease()
		if l == nil {
			continue // resigned by another goroutine meanwhile
		}
		fctx, cancel := l.Context(ctx)
		ferr := fn(fctx)
		cancel()
		lost := l.Err()
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		_ = e.Resign(rctx)
		rcancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case lost == nil && ferr != nil:
			return ferr
		case e.s.Err() != nil:
			return e.s.Err()
		}
	}
}
