package batontest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// stepConn is a Conn that runs a hook at one step of an acquisition: after
// a Create (or CreateAndList) returned, after a Children returned, or as a
// WaitGone begins. It lets a test cancel a Lock exactly there, on any
// backend.
type stepConn struct {
	baton.Conn
	step string // "create", "list" or "wait"
	once sync.Once
	hook func()
}

func (c *stepConn) at(step string) {
	if step == c.step {
		c.once.Do(c.hook)
	}
}

func (c *stepConn) Create(ctx context.Context, dir, kind string, data []byte, f baton.Flags) (baton.Node, error) {
	n, err := c.Conn.Create(ctx, dir, kind, data, f)
	if err == nil {
		c.at("create")
	}
	return n, err
}

func (c *stepConn) Children(ctx context.Context, dir string) ([]baton.Node, error) {
	kids, err := c.Conn.Children(ctx, dir)
	if err == nil {
		c.at("list")
	}
	return kids, err
}

// WaitGone runs the "wait" hook beside the wait, so that what the hook
// does (a cancel) lands while the wait is under way.
func (c *stepConn) WaitGone(ctx context.Context, n baton.Node) error {
	if c.step == "wait" {
		go c.once.Do(c.hook)
	}
	return c.Conn.WaitGone(ctx, n)
}

// stepLister is stepConn over a backend that creates and lists in one
// request: both steps are that request.
type stepLister struct{ *stepConn }

func (c stepLister) CreateAndList(ctx context.Context, dir, kind string, data []byte, f baton.Flags) (baton.Node, []baton.Node, error) {
	n, kids, err := c.Conn.(baton.CreateLister).CreateAndList(ctx, dir, kind, data, f)
	if err == nil {
		c.at("create")
		c.at("list")
	}
	return n, kids, err
}

// withStep wraps s's Conn so that hook runs once at step.
func withStep(s *baton.Session, step string, hook func()) *baton.Session {
	sc := &stepConn{Conn: s.Conn(), step: step, hook: hook}
	if _, ok := s.Conn().(baton.CreateLister); ok {
		return baton.NewSession(stepLister{sc})
	}
	return baton.NewSession(sc)
}

// A Lock cancelled at any step of its acquisition (its node just created,
// the line just listed, the wait begun), with or without its connection
// cut at that moment, leaves no node behind and strands no waiter queued
// behind it: once the holder releases, that waiter acquires.
func testMutexCancelAtEveryStep(t *testing.T, h Harness) {
	for _, step := range []string{"create", "list", "wait"} {
		for _, cut := range []cutKind{noCut, briefCut, longCut} {
			if cut == longCut && step != "wait" {
				continue // one cleanup path for all steps, ~5 s each
			}
			t.Run(step+cut.String(), func(t *testing.T) { cancelAtStep(t, h, step, cut) })
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

func cancelAtStep(t *testing.T, h Harness, step string, cut cutKind) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	holder := baton.NewMutex(ss[0], name)
	if _, err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	waiter := make(chan error, 1)
	var heal func()
	hook := func() {
		// Queue a waiter behind the cancelled contender, then cancel.
		go func() {
			m := baton.NewMutex(ss[2], name)
			_, err := m.Lock(ctx)
			if err == nil {
				err = m.Unlock(ctx)
			}
			waiter <- err
		}()
		if !waitFor(30*time.Second, func() bool { return lockNodes(t, h, name) == 3 }) {
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
	l, err := baton.NewMutex(withStep(ss[1], step, hook), name).Lock(lctx)
	if heal != nil {
		heal()
	}
	switch {
	case err == nil:
		// Cancelled after it was already first in line: it holds. It
		// cannot, here: the holder holds.
		t.Fatalf("Lock cancelled at %s acquired %d while the holder holds", step, l.Token())
	case !errors.Is(err, context.Canceled):
		t.Fatalf("Lock cancelled at %s: %v, want context.Canceled", step, err)
	}
	if ss[1].Err() != nil {
		t.Fatalf("the cancelled contender's session ended: %v", ss[1].Err())
	}
	if !waitFor(30*time.Second, func() bool { return lockNodes(t, h, name) == 2 }) {
		t.Fatalf("%d lock nodes after a Lock cancelled at %s, want the holder's and the waiter's", lockNodes(t, h, name), step)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waiter:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the waiter behind a Lock cancelled at %s is stuck", step)
	}
	if n := lockNodes(t, h, name); n != 0 {
		t.Fatalf("%d lock nodes left", n)
	}
}
