package batontest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
)

// opener returns a SessionFunc opening sessions of ttl on h (0: the
// harness's short TTL) and a function returning the sessions it opened.
func opener(t *testing.T, h Harness, ttl time.Duration) (baton.SessionFunc, func() []*baton.Session) {
	var mu sync.Mutex
	var opened []*baton.Session
	return func(ctx context.Context) (*baton.Session, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			s := h.Open(t, ttl)
			mu.Lock()
			opened = append(opened, s)
			mu.Unlock()
			return s, nil
		}, func() []*baton.Session {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(opened)
		}
}

// runBG runs fn(ctx) in the background; the function returned cancels it
// and returns its error, or an error if it does not return in time. The
// caller defers it too, so that fn ends before the test's cleanups close
// the sessions fn opened (it would open others on the ended test).
func runBG(ctx context.Context, fn func(context.Context) error) (stop func() error) {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fn(rctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				err = errors.New("did not return 20 s after its ctx ended")
			}
		})
		return err
	}
	return stop
}

// ids renders a member listing as "id=data,…".
func ids(ms []baton.Member) string {
	s := ""
	for i, m := range ms {
		if i > 0 {
			s += ","
		}
		s += m.ID + "=" + string(m.Data)
	}
	return s
}

// nextView reads views from w until one renders as want.
func nextView(t *testing.T, w <-chan []baton.Member, want string) []baton.Member {
	t.Helper()
	deadline := time.After(30 * time.Second)
	var last string
	for {
		select {
		case ms, ok := <-w:
			if !ok {
				t.Fatalf("view closed waiting for %q (last %q)", want, last)
			}
			if last = ids(ms); last == want {
				return ms
			}
		case <-deadline:
			t.Fatalf("view is %q, want %q", last, want)
		}
	}
}

// The live view follows members joining, changing data, leaving and being
// cut off, and a member on a group name holds exactly its node.
func testGroupView(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	obs := sessions(t, h, 1)[0]
	g := baton.NewGroup(obs, name)
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	w := g.Watch(wctx)
	nextView(t, w, "")

	openA, _ := opener(t, h, LoadTTL)
	a := baton.NewGroupMember(openA, name, "a", []byte("one"))
	stopA := runBG(ctx, a.Run)
	defer stopA()
	if err := a.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	nextView(t, w, "a=one")
	openB, _ := opener(t, h, LoadTTL)
	b := baton.NewGroupMember(openB, name, "b", []byte("two"))
	stopB := runBG(ctx, b.Run)
	defer stopB()
	nextView(t, w, "a=one,b=two")
	if ms, err := b.Members(ctx); err != nil || ids(ms) != "a=one,b=two" {
		t.Fatalf("GroupMember.Members: %q %v", ids(ms), err)
	}
	for _, id := range []string{"a", "b"} {
		if _, n, err := obs.Conn().Get(ctx, backend.Join(name, id)); err != nil || n.Owner == "" {
			t.Fatalf("member node %s: %+v %v: want an ephemeral node", id, n, err)
		}
	}

	// New data is on the store at once; the view shows it with the next
	// change of membership.
	if err := a.SetData(ctx, []byte("uno")); err != nil {
		t.Fatal(err)
	}
	if ms, err := g.Members(ctx); err != nil || ids(ms) != "a=uno,b=two" {
		t.Fatalf("Members after SetData: %q %v", ids(ms), err)
	}
	if err := stopB(); !errors.Is(err, context.Canceled) {
		t.Fatalf("member b's Run: %v, want context.Canceled", err)
	}
	nextView(t, w, "a=uno")
	if err := stopA(); !errors.Is(err, context.Canceled) {
		t.Fatalf("member a's Run: %v, want context.Canceled", err)
	}
	nextView(t, w, "")

	// The view ends with its session.
	h.Expire(t, obs)
	select {
	case _, ok := <-w:
		for ok {
			_, ok = <-w
		}
	case <-time.After(30 * time.Second):
		t.Fatal("view not closed after its session expired")
	}
}

// A member whose session expires joins again on a new session: the view
// loses it and gets it back, owned by the new session.
func testGroupMemberSessionLoss(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	g := baton.NewGroup(sessions(t, h, 1)[0], name)
	open, opened := opener(t, h, LoadTTL)
	m := baton.NewGroupMember(open, name, "m", []byte("d"))
	stop := runBG(ctx, m.Run)
	defer stop()
	if err := m.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	ms, err := g.Members(ctx)
	if err != nil || ids(ms) != "m=d" {
		t.Fatalf("Members: %q %v", ids(ms), err)
	}
	first, token := opened()[0], ms[0].Node.Token
	if ms[0].Node.Owner != "" && ms[0].Node.Owner != first.ID() {
		t.Fatalf("member node owned by %s, want %s", ms[0].Node.Owner, first.ID())
	}
	h.Expire(t, first)
	if !await.Within(30*time.Second, func() bool {
		ms, err := g.Members(ctx)
		return err == nil && len(ms) == 1 && ms[0].Node.Token != token &&
			len(opened()) >= 2 && ms[0].Node.Owner != first.ID() && string(ms[0].Data) == "d"
	}) {
		ms, err := g.Members(ctx)
		t.Fatalf("after expiry: members %+v (%v), %d sessions opened", ms, err, len(opened()))
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if !settles(func() bool { return len(children(t, h, name)) == 0 }) {
		t.Fatal("member node left after Run returned")
	}
}

// A PersistentNode comes back after its session expires, after it is
// deleted by another client, and adopts a node already at its path; Run's
// end deletes it. Both modes: ephemeral and persistent.
func testPersistentNodeRecreated(t *testing.T, h Harness) {
	for _, ephemeral := range []bool{true, false} {
		t.Run(fmt.Sprintf("ephemeral=%v", ephemeral), func(t *testing.T) {
			ctx := testCtx(t)
			path := backend.Join(h.Path(t), "node")
			other := sessions(t, h, 1)[0]
			c := other.Conn()
			dir := path[:len(path)-len("/node")]
			// Someone else's node at the path is adopted: our data on it.
			if _, err := c.Create(ctx, dir, "node", []byte("theirs"), 0); err != nil {
				t.Fatal(err)
			}
			open, opened := opener(t, h, LoadTTL)
			p := baton.NewPersistentNode(open, path, []byte("ours"), ephemeral)
			stop := runBG(ctx, p.Run)
			defer stop()
			if !settles(func() bool { d, _, err := c.Get(ctx, path); return err == nil && string(d) == "ours" }) {
				t.Fatal("the node at the path was not given our data")
			}
			if err := c.Delete(ctx, backend.Node{Path: path}); err != nil {
				t.Fatal(err)
			}
			n := waitNode(t, ctx, c, path, 0)
			if n.Token == 0 {
				t.Fatalf("recreated node has no token: %+v", n)
			}

			// Session expiry: a new session, the node made again (the
			// ephemeral one goes with the old session).
			s1 := p.Session()
			h.Expire(t, s1)
			if !await.Within(30*time.Second, func() bool { s := p.Session(); return s != nil && s != s1 && s.Err() == nil }) {
				t.Fatal("no new session after expiry")
			}
			n2 := waitNode(t, ctx, c, path, func() int64 {
				if ephemeral {
					return n.Token
				}
				return 0
			}())
			if ephemeral && (n2.Owner == s1.ID() || n2.Owner == "") {
				t.Fatalf("after expiry the node is owned by %q (old session %s)", n2.Owner, s1.ID())
			}
			if got, err := p.Wait(ctx); err != nil || got.Path != path {
				t.Fatalf("Wait() = %+v, %v", got, err)
			}
			if got, ok := p.Node(); !ok || got.Path != path {
				t.Fatalf("Node() = %+v, %v", got, ok)
			}
			if err := p.SetData(ctx, []byte("new")); err != nil {
				t.Fatal(err)
			}
			if d, _, err := c.Get(ctx, path); err != nil || string(d) != "new" {
				t.Fatalf("after SetData: %q %v", d, err)
			}
			if err := stop(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: %v", err)
			}
			if _, _, err := c.Get(ctx, path); !errors.Is(err, baton.ErrNotFound) {
				t.Fatalf("node after Run returned: %v, want ErrNotFound", err)
			}
			for _, s := range opened() {
				if s.Err() == nil {
					t.Fatalf("session %s still open after Run returned", s.ID())
				}
			}
		})
	}
}

// waitNode waits until path exists in an incarnation other than token
// (0: any) and returns it.
func waitNode(t *testing.T, ctx context.Context, c backend.Conn, path string, token int64) backend.Node {
	t.Helper()
	var n backend.Node
	if !await.Within(30*time.Second, func() bool {
		var err error
		_, n, err = c.Get(ctx, path)
		return err == nil && (token == 0 || n.Token != token)
	}) {
		t.Fatalf("%s not (re)created: last %+v", path, n)
	}
	return n
}
