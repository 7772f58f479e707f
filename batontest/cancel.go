package batontest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
)

// stepConn is a Conn that runs a hook at one step of an acquisition: after
// a Create (or CreateAndList) returned, after a Children returned, or as a
// WaitGone begins. It lets a test cancel a Lock exactly there, on any
// backend.
type stepConn struct {
	backend.Conn
	step string // "create", "list" or "wait"
	once sync.Once
	hook func()
}

func (c *stepConn) at(step string) {
	if step == c.step {
		c.once.Do(c.hook)
	}
}

func (c *stepConn) Create(ctx context.Context, dir, kind string, data []byte, f backend.Flags) (backend.Node, error) {
	n, err := c.Conn.Create(ctx, dir, kind, data, f)
	if err == nil {
		c.at("create")
	}
	return n, err
}

func (c *stepConn) Children(ctx context.Context, dir string) ([]backend.Node, error) {
	kids, err := c.Conn.Children(ctx, dir)
	if err == nil {
		c.at("list")
	}
	return kids, err
}

// WaitGone runs the "wait" hook beside the wait, so that what the hook
// does (a cancel) lands while the wait is under way.
func (c *stepConn) WaitGone(ctx context.Context, n backend.Node) error {
	if c.step == "wait" {
		go c.once.Do(c.hook)
	}
	return c.Conn.WaitGone(ctx, n)
}

// WaitChildren is the "wait" step of a recipe that waits on a listing
// (Semaphore), as WaitGone.
func (c *stepConn) WaitChildren(ctx context.Context, dir string, since []backend.Node) error {
	if c.step == "wait" {
		go c.once.Do(c.hook)
	}
	return c.Conn.WaitChildren(ctx, dir, since)
}

// stepLister is stepConn over a backend that creates and lists in one
// request: both steps are that request.
type stepLister struct{ *stepConn }

func (c stepLister) CreateAndList(ctx context.Context, dir, kind string, data []byte, f backend.Flags) (backend.Node, []backend.Node, error) {
	n, kids, err := c.Conn.(backend.CreateLister).CreateAndList(ctx, dir, kind, data, f)
	if err == nil {
		c.at("create")
		c.at("list")
	}
	return n, kids, err
}

// stepRelister is stepLister over a backend that also lists again for a
// waiter (backend.Relister): that listing is a "list" step too.
type stepRelister struct{ stepLister }

func (c stepRelister) Relist(ctx context.Context, dir string, me backend.Node) ([]backend.Node, error) {
	kids, err := c.Conn.(backend.Relister).Relist(ctx, dir, me)
	if err == nil {
		c.at("list")
	}
	return kids, err
}

// withStep wraps s's Conn so that hook runs once at step.
func withStep(s *baton.Session, step string, hook func()) *baton.Session {
	sc := &stepConn{Conn: s.Conn(), step: step, hook: hook}
	_, lists := s.Conn().(backend.CreateLister)
	_, relists := s.Conn().(backend.Relister)
	switch {
	case lists && relists:
		return baton.NewSession(stepRelister{stepLister{sc}}, baton.Telemetry{})
	case lists:
		return baton.NewSession(stepLister{sc}, baton.Telemetry{})
	}
	return baton.NewSession(sc, baton.Telemetry{})
}

// acquirer is one recipe's acquire and release, on a session, for the
// cancel tests.
type acquirer struct {
	dirs func(name string) []string // where its nodes live
	make func(s *baton.Session, name string) (acquire func(context.Context) (*baton.Lease, error), release func(context.Context, *baton.Lease) error)
}

var (
	mutexAcquirer = acquirer{
		dirs: func(name string) []string { return []string{name} },
		make: func(s *baton.Session, name string) (func(context.Context) (*baton.Lease, error), func(context.Context, *baton.Lease) error) {
			m := baton.NewMutex(s, name)
			return m.Lock, func(ctx context.Context, _ *baton.Lease) error { return m.Unlock(ctx) }
		},
	}
	rwMutexAcquirer = acquirer{
		dirs: func(name string) []string { return []string{name} },
		make: func(s *baton.Session, name string) (func(context.Context) (*baton.Lease, error), func(context.Context, *baton.Lease) error) {
			m := baton.NewRWMutex(s, name)
			return m.Lock, func(ctx context.Context, _ *baton.Lease) error { return m.Unlock(ctx) }
		},
	}
	semaphoreAcquirer = acquirer{
		dirs: func(name string) []string { return []string{backend.Join(name, "locks"), backend.Join(name, "leases")} },
		make: func(s *baton.Session, name string) (func(context.Context) (*baton.Lease, error), func(context.Context, *baton.Lease) error) {
			m := baton.NewSemaphore(s, name, 1)
			return m.Acquire, m.Release
		},
	}
)

// A Lock cancelled at any step of its acquisition (its node just created,
// the line just listed, the wait begun), with or without its connection
// cut at that moment, leaves no node behind and strands no waiter queued
// behind it: once the holder releases, that waiter acquires.
func testMutexCancelAtEveryStep(t *testing.T, h Harness) {
	cancelAtEveryStep(t, h, mutexAcquirer, true)
}

// RWMutex.Lock, as Mutex.Lock.
func testRWMutexCancelAtEveryStep(t *testing.T, h Harness) {
	cancelAtEveryStep(t, h, rwMutexAcquirer, false)
}

// Semaphore.Acquire (of one permit), as Mutex.Lock.
func testSemaphoreCancelAtEveryStep(t *testing.T, h Harness) {
	cancelAtEveryStep(t, h, semaphoreAcquirer, false)
}

func cancelAtEveryStep(t *testing.T, h Harness, a acquirer, long bool) {
	for _, step := range []string{"create", "list", "wait"} {
		for _, cut := range []cutKind{noCut, briefCut, longCut} {
			if cut == longCut && (!long || step != "wait") {
				continue // one cleanup path for every step and recipe, ~5 s each
			}
			t.Run(step+cut.String(), func(t *testing.T) { cancelAtStep(t, h, a, step, cut) })
		}
	}
}

// cutKind is how a contender is cut off as its Lock is cancelled.
type cutKind int

const (
	noCut    cutKind = iota
	briefCut         // for cutFor: its cleanup gets through once it is back
	longCut          // until Lock has returned: its cleanup gave up in time, and must still happen
)

func (k cutKind) String() string { return [...]string{"", "+cut", "+longcut"}[k] }

// cutFor is how long cancelAtStep cuts a contender off: well under any
// session's TTL, so the session survives it.
const cutFor = 200 * time.Millisecond

// nodesIn counts the nodes in dirs.
func nodesIn(t *testing.T, h Harness, dirs []string) int {
	n := 0
	for _, d := range dirs {
		n += len(children(t, h, d))
	}
	return n
}

func cancelAtStep(t *testing.T, h Harness, a acquirer, step string, cut cutKind) {
	ctx := testCtx(t)
	name := h.Path(t)
	dirs := a.dirs(name)
	ss := sessions(t, h, 3)
	hold, release := a.make(ss[0], name)
	held, err := hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	waiter := make(chan error, 1)
	var heal func()
	hook := func() {
		// Queue a waiter behind the cancelled contender (the only other
		// one making nodes now), then cancel.
		before := nodesIn(t, h, dirs)
		go func() {
			acquire, release := a.make(ss[2], name)
			l, err := acquire(ctx)
			if err == nil {
				err = release(ctx, l)
			}
			waiter <- err
		}()
		if !await.Within(30*time.Second, func() bool { return nodesIn(t, h, dirs) > before }) {
			t.Error("the waiter never queued")
		}
		switch cut {
		case briefCut:
			time.AfterFunc(cutFor, h.Partition(t, ss[1]))
		case longCut:
			heal = h.Partition(t, ss[1])
		}
		cancel()
	}
	acquire, _ := a.make(withStep(ss[1], step, hook), name)
	l, err := acquire(lctx)
	if heal != nil {
		heal()
	}
	switch {
	case err == nil:
		t.Fatalf("cancelled at %s, it acquired %d while the holder holds", step, l.Token())
	case !errors.Is(err, context.Canceled):
		t.Fatalf("cancelled at %s: %v, want context.Canceled", step, err)
	}
	if ss[1].Err() != nil {
		t.Fatalf("the cancelled contender's session ended: %v", ss[1].Err())
	}
	if err := release(ctx, held); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waiter:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the waiter behind a contender cancelled at %s is stuck", step)
	}
	// Everyone is done and the contender's session lives on: any node
	// left is its orphan.
	if !await.Within(30*time.Second, func() bool { return nodesIn(t, h, dirs) == 0 }) {
		t.Fatalf("%d nodes left by a contender cancelled at %s", nodesIn(t, h, dirs), step)
	}
}
