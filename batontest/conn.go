package batontest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// connSuite lists the tests of the Conn primitives themselves.
var connSuite = []testCase{
	{"Conn/CreateExactlyOnceAfterLostReply", testConnCreateOnce},
	{"Conn/ChildrenInOrder", testConnChildrenOrder},
	{"Conn/RecreatedNode", testConnRecreated},
	{"Conn/RecreatedQueueItem", testConnRecreatedQueueItem},
	{"Conn/WaitChildrenDifferRule", testConnWaitChildrenRule},
	{"Conn/SessionGone", testConnSessionGone},
	{"Conn/CancelledContext", testConnCancelled},
	{"Conn/CancelWhileWaiting", testConnCancelWaiting},
	{"Conn/WaitChanged", testConnWaitChanged},
	{"Conn/CommitIfVersion", testConnCommitIfVersion},
}

// RunConn runs the suite of the Conn contract (baton.Conn's doc) against
// one backend: exactly-once creates, listing order, incarnations, the one
// rule of WaitChildren, and how every method ends after a loss and on a
// cancelled context.
func RunConn(t *testing.T, h Harness) { runCases(t, h, connSuite) }

// notReturning is how long a wait that must block is watched for not
// returning. It proves nothing about speed: a wait that returns wrongly
// returns at once.
const notReturning = 300 * time.Millisecond

// Create is exactly-once: when the reply of a create that the store
// applied is lost, the node comes back once, and no second one is left.
func testConnCreateOnce(t *testing.T, h Harness) {
	if h.DropCreateReply == nil {
		t.Fatalf("%s: harness has no DropCreateReply", h.Name)
	}
	ctx := testCtx(t)
	s := h.Open(t, LoadTTL)
	c := s.Conn()
	for _, tc := range []struct {
		name string
		kind string
		f    backend.Flags
	}{
		{"sequential", backend.KindLock, backend.Ephemeral | backend.Sequential},
		{"literal", "fixed", backend.Ephemeral},
	} {
		dir := h.Path(t)
		h.DropCreateReply(t, s)
		n, err := c.Create(ctx, dir, tc.kind, []byte("x"), tc.f)
		if err != nil {
			t.Fatalf("%s: Create after a lost reply: %v", tc.name, err)
		}
		kids, err := c.Children(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) != 1 {
			t.Fatalf("%s: %d nodes after one Create whose reply was lost: %v", tc.name, len(kids), kids)
		}
		if kids[0].Path != n.Path {
			t.Fatalf("%s: Create returned %s, the store holds %s", tc.name, n.Path, kids[0].Path)
		}
		if _, got, err := c.Get(ctx, n.Path); err != nil || (n.Token != 0 && got.Token != n.Token) {
			t.Fatalf("%s: Get %s: token %d, err %v; Create said token %d", tc.name, n.Path, got.Token, err, n.Token)
		}
		if n.Owner != s.ID() {
			t.Fatalf("%s: owner %q, want the session %q", tc.name, n.Owner, s.ID())
		}
	}
	cl, ok := c.(backend.CreateLister)
	if !ok {
		return
	}
	// CreateAndList too: the node once, in its own listing, which a
	// Relist (where the backend has it) and Children agree with.
	dir := h.Path(t)
	first, err := c.Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	h.DropCreateReply(t, s)
	n, kids, err := cl.CreateAndList(ctx, dir, backend.KindLock, []byte("x"), backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatalf("CreateAndList after a lost reply: %v", err)
	}
	paths := func(ns []backend.Node) []string {
		var out []string
		for _, k := range ns {
			out = append(out, k.Path)
		}
		return out
	}
	want := []string{first.Path, n.Path}
	if got := paths(kids); !slices.Equal(got, want) {
		t.Fatalf("CreateAndList after a lost reply listed %v, want %v", got, want)
	}
	if kids[1].Token != n.Token || n.Owner != s.ID() {
		t.Fatalf("CreateAndList returned %+v, listed %+v", n, kids[1])
	}
	if got, err := c.Children(ctx, dir); err != nil || !slices.Equal(paths(got), want) {
		t.Fatalf("Children after CreateAndList: %v, %v; want %v", paths(got), err, want)
	}
	if r, ok := c.(backend.Relister); ok {
		if got, err := r.Relist(ctx, dir, n); err != nil || !slices.Equal(paths(got), want) {
			t.Fatalf("Relist after CreateAndList: %v, %v; want %v", paths(got), err, want)
		}
	}
}

// Children lists sequential nodes in creation order (whichever session
// made them), then the others by name.
func testConnChildrenOrder(t *testing.T, h Harness) {
	ctx := testCtx(t)
	ss := sessions(t, h, 2)
	dir := h.Path(t)
	var want []string
	for i := range 6 {
		n, err := ss[i%2].Conn().Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, n.Path)
	}
	for _, name := range []string{"zeta", "alpha", "mid"} {
		if _, err := ss[0].Conn().Create(ctx, dir, name, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, backend.Join(dir, "alpha"), backend.Join(dir, "mid"), backend.Join(dir, "zeta"))
	for _, s := range ss {
		kids, err := s.Conn().Children(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, k := range kids {
			got = append(got, k.Path)
		}
		if len(got) != len(want) {
			t.Fatalf("Children: %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("Children: %v, want %v", got, want)
			}
		}
		for i := 1; i < 6; i++ {
			if kids[i].Seq <= kids[i-1].Seq {
				t.Fatalf("Seq not increasing: %d then %d", kids[i-1].Seq, kids[i].Seq)
			}
		}
	}
	for _, p := range want[6:] {
		if err := ss[0].Conn().Delete(ctx, backend.Node{Path: p}); err != nil {
			t.Fatal(err)
		}
	}
}

// recreate makes a node named name in dir, removes it and makes it again:
// two incarnations of one path.
func recreate(t *testing.T, ctx context.Context, c backend.Conn, dir, name string) (old, cur backend.Node) {
	t.Helper()
	old, err := c.Create(ctx, dir, name, []byte("old"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	cur, err = c.Create(ctx, dir, name, []byte("new"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Path != old.Path || cur.Token == old.Token || old.Token == 0 {
		t.Fatalf("recreated %s: tokens %d and %d", old.Path, old.Token, cur.Token)
	}
	return old, cur
}

// Delete, WaitGone and Commit act on one incarnation: given a node that
// was removed and made again under the same name, they leave the new one
// alone.
func testConnRecreated(t *testing.T, h Harness) {
	ctx := testCtx(t)
	c := h.Open(t, LoadTTL).Conn()
	dir := h.Path(t)
	old, cur := recreate(t, ctx, c, dir, "item")
	checkIncarnations(t, ctx, c, dir, old, cur)
}

// A queue item ("qn-<seq>") whose directory was removed and made again may
// come back under the same name (ZooKeeper restarts the sequence in a new
// container). Commit guarded by the old item, as Queue.Take does, must
// fail, and its delete must not take the new item.
func testConnRecreatedQueueItem(t *testing.T, h Harness) {
	ctx := testCtx(t)
	c := h.Open(t, LoadTTL).Conn()
	dir := h.Path(t)
	old, err := c.Create(ctx, dir, backend.KindQueue, []byte("old"), backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	// Remove the emptied directory where the store has one.
	if err := c.Delete(ctx, backend.Node{Path: dir}); err != nil && !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("delete %s: %v", dir, err)
	}
	cur, err := c.Create(ctx, dir, backend.KindQueue, []byte("new"), backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Path != old.Path {
		// The store never reuses the name: the other incarnation
		// cannot be reached by name at all. Still check the old node
		// is treated as gone.
		t.Logf("%s: queue item names are not reused (%s, then %s)", h.Name, old.Name, cur.Name)
	}
	checkIncarnations(t, ctx, c, dir, old, cur)
}

func checkIncarnations(t *testing.T, ctx context.Context, c backend.Conn, dir string, old, cur backend.Node) {
	t.Helper()
	intact := func(what string) {
		t.Helper()
		data, n, err := c.Get(ctx, cur.Path)
		if err != nil {
			t.Fatalf("after %s: the new incarnation: %v", what, err)
		}
		if n.Token != cur.Token || string(data) != "new" {
			t.Fatalf("after %s: the new incarnation changed: token %d (want %d), data %q", what, n.Token, cur.Token, data)
		}
	}
	err := c.Commit(ctx, old, backend.Op{Kind: backend.OpSet, Node: cur, Data: []byte("guarded by the old")})
	if !errors.Is(err, backend.ErrGuard) {
		t.Fatalf("Commit guarded by a removed incarnation: %v, want ErrGuard", err)
	}
	intact("a Commit guarded by the old incarnation")
	err = c.Commit(ctx, old, backend.Op{Kind: backend.OpDelete, Node: old})
	if !errors.Is(err, backend.ErrGuard) {
		t.Fatalf("Commit deleting the old incarnation, guarded by it: %v, want ErrGuard", err)
	}
	intact("a guarded Commit deleting the old incarnation")
	if err := c.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpSet, Node: old, Data: []byte("set on the old")}); err == nil {
		t.Fatal("Commit setting a removed incarnation succeeded")
	}
	intact("a Commit setting the old incarnation")
	if err := c.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpDelete, Node: old}); err == nil {
		t.Fatal("Commit deleting a removed incarnation succeeded")
	}
	intact("a Commit deleting the old incarnation")
	if err := c.Delete(ctx, old); err != nil {
		t.Fatalf("Delete of a removed incarnation: %v, want nil", err)
	}
	intact("Delete of the old incarnation")
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.WaitGone(wctx, old); err != nil {
		t.Fatalf("WaitGone on a removed incarnation: %v, want nil at once", err)
	}
	// And the current incarnation is still reachable exactly.
	if err := c.Commit(ctx, cur, backend.Op{Kind: backend.OpSet, Node: cur, Data: []byte("new")}); err != nil {
		t.Fatalf("Commit guarded by the current incarnation: %v", err)
	}
	if err := c.Commit(ctx, cur, backend.Op{Kind: backend.OpDelete, Node: cur}); err != nil {
		t.Fatalf("Commit deleting the current incarnation: %v", err)
	}
	if _, _, err := c.Get(ctx, cur.Path); !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("after its delete, Get: %v, want ErrNotFound", err)
	}
}

// waitChildrenReturns runs WaitChildren(dir, since) for up to d and says
// whether it returned nil within it (false if it was still waiting).
func waitChildrenReturns(t *testing.T, ctx context.Context, c backend.Conn, dir string, since []backend.Node, d time.Duration) bool {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := c.WaitChildren(wctx, dir, since)
	switch {
	case err == nil:
		return true
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return false
	default:
		t.Fatalf("WaitChildren: %v", err)
		return false
	}
}

// WaitChildren returns exactly when the listing differs from since by
// baton.ChildrenDiffer: not for another order or an unknown (zero) token,
// at once for a missing or extra path or another known token, and as soon
// as a child comes or goes.
func testConnWaitChildrenRule(t *testing.T, h Harness) {
	ctx := testCtx(t)
	c := h.Open(t, LoadTTL).Conn()
	dir := h.Path(t)
	for range 3 {
		if _, err := c.Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.Children(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	mod := func(f func([]backend.Node) []backend.Node) []backend.Node {
		return f(append([]backend.Node(nil), list...))
	}
	cases := []struct {
		name  string
		since []backend.Node
	}{
		{"the same listing", list},
		{"reversed", mod(func(s []backend.Node) []backend.Node {
			for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
				s[i], s[j] = s[j], s[i]
			}
			return s
		})},
		{"tokens unknown", mod(func(s []backend.Node) []backend.Node {
			for i := range s {
				s[i].Token = 0
			}
			return s
		})},
		{"other fields changed", mod(func(s []backend.Node) []backend.Node {
			for i := range s {
				s[i].Seq, s[i].Owner, s[i].Created = 0, "", time.Time{}
			}
			return s
		})},
		{"another token", mod(func(s []backend.Node) []backend.Node {
			s[1].Token = 1 << 40
			return s
		})},
		{"one missing", list[1:]},
		{"one extra", append(mod(func(s []backend.Node) []backend.Node { return s }), backend.Node{Path: backend.Join(dir, "ghost"), Name: "ghost"})},
		{"one replaced", mod(func(s []backend.Node) []backend.Node {
			s[0] = backend.Node{Path: backend.Join(dir, "ghost"), Name: "ghost"}
			return s
		})},
		{"empty", nil},
	}
	for _, tc := range cases {
		now, err := c.Children(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		want := backend.ChildrenDiffer(now, tc.since)
		d := notReturning
		if want {
			d = 30 * time.Second
		}
		if got := waitChildrenReturns(t, ctx, c, dir, tc.since, d); got != want {
			t.Fatalf("%s: WaitChildren returned: %v; ChildrenDiffer says %v", tc.name, got, want)
		}
	}
	// A change while waiting wakes it.
	for _, change := range []string{"create", "delete"} {
		since, err := c.Children(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res := make(chan error, 1)
		go func() { res <- c.WaitChildren(wctx, dir, since) }()
		// The wait may or may not be armed yet: either way it must
		// see the change.
		if change == "create" {
			_, err = c.Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
		} else {
			err = c.Delete(ctx, since[0])
		}
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		err = <-res
		cancel()
		if err != nil {
			t.Fatalf("WaitChildren across a %s: %v", change, err)
		}
	}
}

// connCalls calls every Conn method once on c, with nodes of dir.
func connCalls(ctx context.Context, c backend.Conn, dir string, n backend.Node) map[string]error {
	errs := map[string]error{}
	_, errs["Create"] = c.Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	_, errs["Create literal"] = c.Create(ctx, dir, "fixed", nil, 0)
	_, errs["Children"] = c.Children(ctx, dir)
	_, _, errs["Get"] = c.Get(ctx, n.Path)
	errs["Delete"] = c.Delete(ctx, n)
	errs["WaitGone"] = c.WaitGone(ctx, n)
	errs["WaitChildren"] = c.WaitChildren(ctx, dir, nil)
	_, errs["WaitExists"] = c.WaitExists(ctx, backend.Join(dir, "never"))
	errs["WaitChanged"] = c.WaitChanged(ctx, n)
	errs["Commit"] = c.Commit(ctx, n, backend.Op{Kind: backend.OpSet, Node: n, Data: []byte("x")})
	errs["Commit unguarded"] = c.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpCreate, Dir: dir, Name: "made", Flags: backend.Ephemeral})
	if cl, ok := c.(backend.CreateLister); ok {
		_, _, errs["CreateAndList"] = cl.CreateAndList(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	}
	if r, ok := c.(backend.Relister); ok {
		_, errs["Relist"] = r.Relist(ctx, dir, n)
	}
	return errs
}

// Once a session is gone (expired, lost, closed), every method fails with
// an error satisfying IsSessionGone, at once.
func testConnSessionGone(t *testing.T, h Harness) {
	for _, how := range []string{"expired", "lost", "closed"} {
		t.Run(how, func(t *testing.T) {
			ctx := testCtx(t)
			var s *baton.Session
			switch how {
			case "expired":
				s = h.Open(t, LoadTTL)
			default:
				s = h.Open(t, 0)
			}
			c := s.Conn()
			dir := h.Path(t)
			n, err := c.Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
			if err != nil {
				t.Fatal(err)
			}
			switch how {
			case "expired":
				h.Expire(t, s)
			case "lost":
				heal := h.Partition(t, s)
				defer heal()
			case "closed":
				if err := s.Close(ctx); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-s.Done():
			case <-ctx.Done():
				t.Fatalf("session still live after being %s", how)
			}
			if !baton.IsSessionGone(s.Err()) {
				t.Fatalf("Err after being %s: %v", how, s.Err())
			}
			// A generous bound: a method must not wait for anything.
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			for m, err := range connCalls(cctx, c, dir, n) {
				if !baton.IsSessionGone(err) {
					t.Errorf("%s after the session was %s: %v, want an error satisfying IsSessionGone", m, how, err)
				}
			}
		})
	}
}

// On a cancelled context, every method returns ctx.Err().
func testConnCancelled(t *testing.T, h Harness) {
	ctx := testCtx(t)
	c := h.Open(t, LoadTTL).Conn()
	dir := h.Path(t)
	n, err := c.Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for m, err := range connCalls(cctx, c, dir, n) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", m, err)
		}
	}
	// Nothing was made or removed.
	kids, err := c.Children(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 1 || kids[0].Path != n.Path {
		t.Fatalf("after calls on a cancelled context the directory holds %v, want only %s", kids, n.Path)
	}
}

// A wait cancelled while it waits returns ctx.Err(), and sets nothing
// that outlives it on the session (it can wait again).
func testConnCancelWaiting(t *testing.T, h Harness) {
	ctx := testCtx(t)
	c := h.Open(t, LoadTTL).Conn()
	dir := h.Path(t)
	n, err := c.Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.Children(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	waits := map[string]func(context.Context) error{
		"WaitGone":     func(ctx context.Context) error { return c.WaitGone(ctx, n) },
		"WaitChanged":  func(ctx context.Context) error { return c.WaitChanged(ctx, n) },
		"WaitChildren": func(ctx context.Context) error { return c.WaitChildren(ctx, dir, list) },
		"WaitExists": func(ctx context.Context) error {
			_, err := c.WaitExists(ctx, backend.Join(dir, "never"))
			return err
		},
	}
	for name, wait := range waits {
		for _, cause := range []error{context.Canceled, context.DeadlineExceeded} {
			wctx, cancel := context.WithTimeout(ctx, notReturning)
			res := make(chan error, 1)
			go func() { res <- wait(wctx) }()
			if cause == context.Canceled {
				cancel()
			}
			select {
			case err := <-res:
				if !errors.Is(err, cause) {
					t.Errorf("%s ended by %v: %v", name, cause, err)
				}
			case <-ctx.Done():
				t.Fatalf("%s still waiting after its context ended", name)
			}
			cancel()
		}
	}
}

// WaitChanged wakes on a write of the node's data (by another session)
// and on its delete (ErrNotFound), at once when the data was written
// after the version it is given, and not before; Get's Version changes
// with every write.
func testConnWaitChanged(t *testing.T, h Harness) {
	ctx := testCtx(t)
	dir := h.Path(t)
	ss := sessions(t, h, 2)
	c, other := ss[0].Conn(), ss[1].Conn()
	made, err := c.Create(ctx, dir, "data", []byte("a"), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, n, err := c.Get(ctx, made.Path)
	if err != nil {
		t.Fatal(err)
	}
	wait := func(n backend.Node) chan error {
		res := make(chan error, 1)
		go func() { res <- c.WaitChanged(ctx, n) }()
		return res
	}
	quiet := func(res chan error, what string) {
		t.Helper()
		select {
		case err := <-res:
			t.Fatalf("WaitChanged returned %v %s", err, what)
		case <-time.After(notReturning):
		}
	}
	res := wait(n)
	quiet(res, "before any write")
	if err := other.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpSet, Node: n, Data: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatalf("WaitChanged after a write: %v", err)
	}
	data, n2, err := c.Get(ctx, n.Path)
	if err != nil || string(data) != "b" || n2.Version == n.Version || n2.Token != n.Token {
		t.Fatalf("Get after a write: %q version %d (was %d) token %d (was %d) %v", data, n2.Version, n.Version, n2.Token, n.Token, err)
	}
	if err := c.WaitChanged(ctx, n); err != nil {
		t.Fatalf("WaitChanged at an old version: %v, want nil at once", err)
	}
	res = wait(n2)
	quiet(res, "with no write since its version")
	if err := other.Delete(ctx, n2); err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("WaitChanged after a delete: %v, want ErrNotFound", err)
	}
	if err := c.WaitChanged(ctx, n2); !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("WaitChanged on a gone node: %v, want ErrNotFound", err)
	}
}

// A Set or Delete with IfVersion applies only at the data version it was
// read at: at a stale one Commit returns ErrConflict and applies nothing,
// not even the other ops of the commit.
func testConnCommitIfVersion(t *testing.T, h Harness) {
	ctx := testCtx(t)
	dir := h.Path(t)
	c := sessions(t, h, 1)[0].Conn()
	if _, err := c.Create(ctx, dir, "v", []byte("a"), backend.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, n, err := c.Get(ctx, backend.Join(dir, "v"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpSet, Node: n, Data: []byte("b"), IfVersion: true}); err != nil {
		t.Fatalf("Set at the version read: %v", err)
	}
	stale := []backend.Op{
		{Kind: backend.OpCreate, Dir: dir, Name: "side", Flags: backend.Ephemeral},
		{Kind: backend.OpSet, Node: n, Data: []byte("c"), IfVersion: true},
	}
	if err := c.Commit(ctx, backend.Node{}, stale...); !errors.Is(err, baton.ErrConflict) {
		t.Fatalf("Set at a stale version: %v, want ErrConflict", err)
	}
	if err := c.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpDelete, Node: n, IfVersion: true}); !errors.Is(err, baton.ErrConflict) {
		t.Fatalf("Delete at a stale version: %v, want ErrConflict", err)
	}
	data, cur, err := c.Get(ctx, n.Path)
	if err != nil || string(data) != "b" {
		t.Fatalf("data %q %v after the refused commits, want b", data, err)
	}
	if _, _, err := c.Get(ctx, backend.Join(dir, "side")); !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("a refused commit created its other node: %v", err)
	}
	if err := c.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpDelete, Node: cur, IfVersion: true}); err != nil {
		t.Fatalf("Delete at the current version: %v", err)
	}
}
