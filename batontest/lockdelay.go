package batontest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// markers counts lock-delay markers (non-contender children) under name.
func markers(t *testing.T, h Harness, name string) int {
	n := 0
	for _, k := range children(t, h, name) {
		if k.Kind != backend.KindLock {
			n++
		}
	}
	return n
}

// A holder whose session expires leaves the lock unavailable for the
// delay: the next contender gets it no sooner than the delay after the
// expiry, and a clean Unlock then leaves no marker.
func testLockDelayExpired(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const delay = 500 * time.Millisecond
	ss := sessions(t, h, 2)
	if _, err := baton.NewMutex(ss[0], name, baton.LockDelay(delay)).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if markers(t, h, name) != 1 {
		t.Fatalf("no marker while held: %v", children(t, h, name))
	}
	expired := time.Now()
	h.Expire(t, ss[0])
	next := baton.NewMutex(ss[1], name, baton.LockDelay(delay))
	if _, err := next.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(expired); waited < delay {
		t.Fatalf("acquired %v after the holder's session expired, want at least the delay %v", waited, delay)
	}
	if err := next.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !settles(func() bool { return len(children(t, h, name)) == 0 }) {
		t.Fatalf("left after a clean Unlock: %v", children(t, h, name))
	}
}

// A clean Unlock is not delayed (a delay of an hour would time the test
// out), and without the option an expired holder delays nobody.
func testLockDelayReleasedAndOff(t *testing.T, h Harness) {
	ctx, cancel := context.WithTimeout(testCtx(t), 30*time.Second)
	defer cancel()
	name := h.Path(t)
	ss := sessions(t, h, 3)
	a := baton.NewMutex(ss[0], name, baton.LockDelay(time.Hour))
	if _, err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	b := baton.NewMutex(ss[1], name, baton.LockDelay(time.Hour))
	if _, err := b.Lock(ctx); err != nil {
		t.Fatalf("after a clean release: %v", err)
	}
	h.Expire(t, ss[1])
	if _, err := baton.NewMutex(ss[2], name).Lock(ctx); err != nil {
		t.Fatalf("without the option, after an expired holder: %v", err)
	}
}

// A contender cancelled (or timed out) while it waits out the delay
// leaves nothing of its own behind, and TryLock waits out the delay too.
func testLockDelayCancel(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	if _, err := baton.NewMutex(ss[0], name, baton.LockDelay(time.Hour)).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	h.Expire(t, ss[0])
	m := baton.NewMutex(ss[1], name, baton.LockDelay(time.Hour))
	for _, try := range []bool{false, true} {
		dctx, dcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		var err error
		if try {
			_, err = m.TryLock(dctx)
		} else {
			_, err = m.Lock(dctx)
		}
		dcancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("try=%v: Lock during the delay returned %v, want DeadlineExceeded", try, err)
		}
		if !settles(func() bool { return lockNodes(t, h, name) == 0 }) {
			t.Fatalf("try=%v: %d contenders left after the timeout", try, lockNodes(t, h, name))
		}
		if m.Held() {
			t.Fatalf("try=%v: Held after a failed Lock", try)
		}
	}
}

// errInjected is the failure markFaultConn injects.
var errInjected = errors.New("batontest: injected failure")

// markFaultConn fails the first Commit (the lock-delay marker's write) and
// the first Delete after it, as a connection blip that the session
// survives would.
type markFaultConn struct {
	backend.Conn
	commits, deletes atomic.Int32
}

func (c *markFaultConn) Commit(ctx context.Context, guard backend.Node, ops ...backend.Op) error {
	if c.commits.Add(1) == 1 {
		return errInjected
	}
	return c.Conn.Commit(ctx, guard, ops...)
}

func (c *markFaultConn) Delete(ctx context.Context, n backend.Node) error {
	if c.commits.Load() > 0 && c.deletes.Add(1) == 1 {
		return errInjected
	}
	return c.Conn.Delete(ctx, n)
}

// markFaultLister is markFaultConn over a backend that creates and lists
// in one request.
type markFaultLister struct{ *markFaultConn }

func (c markFaultLister) CreateAndList(ctx context.Context, dir, kind string, data []byte, f backend.Flags) (backend.Node, []backend.Node, error) {
	return c.Conn.(backend.CreateLister).CreateAndList(ctx, dir, kind, data, f)
}

// A contender whose marker write fails, and whose first delete of its own
// lock node fails too, still removes that node while its session lives:
// left there, it would stall every later contender for the session's life.
func testLockDelayMarkerFails(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	fc := &markFaultConn{Conn: ss[0].Conn()}
	faulty := baton.NewSession(fc, baton.Telemetry{})
	if _, ok := fc.Conn.(backend.CreateLister); ok {
		faulty = baton.NewSession(markFaultLister{fc}, baton.Telemetry{})
	}
	if _, err := baton.NewMutex(faulty, name, baton.LockDelay(time.Hour)).Lock(ctx); !errors.Is(err, errInjected) {
		t.Fatalf("Lock with a failing marker returned %v, want the injected failure", err)
	}
	if got := fc.deletes.Load(); got == 0 {
		t.Fatal("the failed Lock did not try to delete its node")
	}
	lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	next := baton.NewMutex(ss[1], name, baton.LockDelay(time.Hour))
	if _, err := next.Lock(lctx); err != nil {
		t.Fatalf("next contender, the failed one's session still live: %v (left: %v)", err, children(t, h, name))
	}
	if err := next.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
