package zk

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/zktest"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCreateListGetDelete(t *testing.T) {
	ctx := ctxT(t)
	s := openT(t, 0)
	c := s.Conn()
	dir := testPath(t) + "/a/b"
	n1, err := c.Create(ctx, dir, backend.KindLock, []byte("x"), backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	n2, err := c.Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	if n1.Kind != backend.KindLock || n1.Owner != s.ID() || n1.Token == 0 || n2.Token <= n1.Token || n2.Seq != n1.Seq+1 {
		t.Fatalf("nodes %+v %+v (session %s)", n1, n2, s.ID())
	}
	data, g, err := c.Get(ctx, n1.Path)
	if err != nil || string(data) != "x" || g.Token != n1.Token || g.Owner != s.ID() {
		t.Fatalf("Get = %q %+v %v; want token %d", data, g, err, n1.Token)
	}
	if _, err := c.Create(ctx, dir, "ready", nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, dir, "ready", nil, 0); !errors.Is(err, baton.ErrExists) {
		t.Fatalf("second create of ready: %v, want ErrExists", err)
	}
	kids, err := c.Children(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 3 || kids[0].Path != n1.Path || kids[1].Path != n2.Path || kids[2].Name != "ready" {
		t.Fatalf("children = %+v", kids)
	}
	if err := c.Delete(ctx, n1); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, n1); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if _, _, err := c.Get(ctx, n1.Path); !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("Get deleted: %v", err)
	}
	if _, pn, err := c.Get(ctx, dir); err != nil || pn.Owner != "" || pn.Kind != "b" {
		t.Fatalf("parent node %+v %v", pn, err)
	}
	// The parent is a container node: the server removes it once it has
	// had children and has none (the test server checks every 500 ms).
	for _, k := range kids[1:] {
		if err := c.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitGone(ctx, backend.Node{Path: dir}); err != nil {
		t.Fatalf("empty container parent not removed: %v", err)
	}
	if kids, err := c.Children(ctx, "/does/not/exist"); err != nil || len(kids) != 0 {
		t.Fatalf("missing dir: %v %v", kids, err)
	}
}

func TestInvalidNames(t *testing.T) {
	ctx := ctxT(t)
	c := openT(t, 0).Conn()
	for _, p := range []string{"", "a/", "/a/", "//a", "/a//b", "a//b", "/a/../b", "a/./b", "/a/\x01", "/a\u0085"} {
		if _, err := c.Children(ctx, p); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("Children(%q) = %v, want ErrInvalidName", p, err)
		}
		if _, err := c.Create(ctx, p, backend.KindLock, nil, backend.Ephemeral|backend.Sequential); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("Create(%q) = %v, want ErrInvalidName", p, err)
		}
	}
	for _, k := range []string{"", "a/b", "..", "bogus"} {
		f := backend.Flags(0)
		if k == "bogus" {
			f = backend.Sequential
		}
		if _, err := c.Create(ctx, "/x", k, nil, f); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("Create(kind %q) = %v, want ErrInvalidName", k, err)
		}
	}
	if err := c.Delete(ctx, backend.Node{Path: "nope/"}); !errors.Is(err, baton.ErrInvalidName) {
		t.Errorf("Delete(nope/) = %v", err)
	}
}

// A path without its leading "/" is the absolute one (baton.CleanName:
// ZooKeeper needs absolute paths): every method takes it, and every node
// returned has the absolute path. "" is the top of the store for a plain
// node only.
func TestPathWithoutSlash(t *testing.T) {
	ctx := ctxT(t)
	a, b := openT(t, 0).Conn(), openT(t, 0).Conn()
	abs := testPath(t)
	rel := strings.TrimPrefix(abs, "/")
	n, err := a.Create(ctx, rel+"/q", backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil || !strings.HasPrefix(n.Path, abs+"/q/") {
		t.Fatalf("Create in %q: %+v, %v; want a node under %s/q", rel+"/q", n, err, abs)
	}
	for _, dir := range []string{rel + "/q", abs + "/q"} {
		if kids, err := b.Children(ctx, dir); err != nil || len(kids) != 1 || kids[0].Path != n.Path {
			t.Fatalf("Children(%q) = %+v, %v; want %s", dir, kids, err, n.Path)
		}
	}
	if _, g, err := b.Get(ctx, strings.TrimPrefix(n.Path, "/")); err != nil || g.Path != n.Path || g.Token != n.Token {
		t.Fatalf("Get without the /: %+v, %v", g, err)
	}
	kids, err := b.Children(ctx, rel+"/q")
	if err != nil {
		t.Fatal(err)
	}
	gone := make(chan error, 1)
	go func() { gone <- b.WaitChildren(ctx, rel+"/q", kids) }()
	if err := a.Delete(ctx, backend.Node{Path: strings.TrimPrefix(n.Path, "/"), Token: n.Token}); err != nil {
		t.Fatal(err)
	}
	if err := <-gone; err != nil {
		t.Fatal(err)
	}
	top := strings.ReplaceAll(rel, "/", "-")
	if n, err := a.Create(ctx, "", top, nil, backend.Ephemeral); err != nil || n.Path != "/"+top {
		t.Fatalf("Create(%q, %q): %+v, %v; want /%s", "", top, n, err, top)
	}
	if _, err := a.Create(ctx, "", backend.KindLock, nil, backend.Ephemeral|backend.Sequential); !errors.Is(err, baton.ErrInvalidName) {
		t.Fatalf("a sequential node at the top (dir \"\"): %v, want ErrInvalidName", err)
	}
}

func TestTTLBelowMinimum(t *testing.T) {
	ctx := ctxT(t)
	_, err := Open(ctx, zktest.Shared(t).Servers(), WithTTL(50*time.Millisecond))
	if !errors.Is(err, baton.ErrInvalidTTL) {
		t.Fatalf("Open with 50ms TTL: %v, want ErrInvalidTTL", err)
	}
	s := openT(t, 300*time.Millisecond)
	if s.TTL() != 300*time.Millisecond {
		t.Fatalf("TTL = %v", s.TTL())
	}
}

func TestExpire(t *testing.T) {
	ctx := ctxT(t)
	s, p := openProxied(t, 0)
	other := openT(t, 0)
	dir := testPath(t)
	n, err := s.Conn().Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() { waiting <- s.Conn().WaitGone(ctx, backend.Node{Path: dir + "/nothing-here-but-watched"}) }()
	expire(t, zktest.Shared(t).Addr(), p, s)
	if err := waitDone(t, s, 10*time.Second); !errors.Is(err, baton.ErrSessionExpired) {
		t.Fatalf("Err = %v, want ErrSessionExpired", err)
	}
	if err := <-waiting; err != nil && !baton.IsSessionGone(err) {
		t.Fatalf("WaitGone after expiry: %v", err)
	}
	if _, err := s.Conn().Children(ctx, dir); !baton.IsSessionGone(err) {
		t.Fatalf("Children after expiry: %v", err)
	}
	if err := other.Conn().WaitGone(ctx, n); err != nil {
		t.Fatalf("our node outlived the session: %v", err)
	}
}

func TestCloseRemovesEphemerals(t *testing.T) {
	ctx := ctxT(t)
	s := openT(t, 0)
	other := openT(t, 0)
	n, err := s.Conn().Create(ctx, testPath(t), backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(s.Err(), baton.ErrClosed) {
		t.Fatalf("Err = %v", s.Err())
	}
	if _, _, err := other.Conn().Get(ctx, n.Path); !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("node after Close: %v", err)
	}
}

// TestRequestsPerAcquisition counts the requests one Mutex acquisition
// sends: uncontended create+list+delete, and the holder's exists watch on
// its own node (which tells it when anyone else deletes the node); contended
// one more, the exists watch on the predecessor (go-zookeeper's Lock, which
// does not watch its own node: 3 and 5).
func TestRequestsPerAcquisition(t *testing.T) {
	ctx := ctxT(t)
	path := testPath(t)
	a, b := openT(t, 0), openT(t, 0)
	ma, mb := baton.NewMutex(a, path), baton.NewMutex(b, path)
	// Warm up: the first acquisition also creates the container parent.
	if _, err := ma.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ma.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	ca := sessionOf(a)
	// watched waits until the holder's watch on its own node is sent (it
	// goes out in the background after Lock returns; a release before it
	// leaves would save it).
	watched := func(c interface{ Requests() int64 }, from, n int64) {
		t.Helper()
		await.Until(t, 10*time.Second, fmt.Sprintf("%d requests sent", n), func() bool { return c.Requests()-from >= n })
	}
	before := ca.Requests()
	if _, err := ma.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	watched(ca, before, 3)
	if err := ma.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ca.Requests() - before; got != 4 {
		t.Errorf("uncontended acquisition: %d requests, want 4", got)
	}
	t.Logf("uncontended: %d requests", ca.Requests()-before)

	if _, err := ma.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	cb := sessionOf(b)
	before = cb.Requests()
	got := make(chan error, 1)
	go func() {
		_, err := mb.Lock(ctx)
		got <- err
	}()
	// Wait until b is queued (its watch is on the server), then release.
	await.Until(t, 10*time.Second, "b to queue", func() bool { return cb.Requests()-before >= 3 })
	if err := ma.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	watched(cb, before, 4)
	if err := mb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := cb.Requests() - before; n > 5 {
		t.Errorf("contended acquisition: %d requests, want ≤ 5", n)
	} else {
		t.Logf("contended: %d requests", n)
	}
}

// A create whose reply is lost with its connection is found again by its
// id once reconnected: one node, with its real token.
func TestCreateReplyLostFoundAgain(t *testing.T) {
	ctx := ctxT(t)
	d := &replyDropper{}
	s := openT(t, 0, withDropper(d))
	c := s.Conn()
	dir := testPath(t)
	if _, err := c.Create(ctx, dir, "warm", nil, backend.Ephemeral); err != nil {
		t.Fatal(err)
	}
	before := sessionOf(s).Requests()
	d.dropNext()
	n, err := c.Create(ctx, dir, backend.KindLock, []byte("d"), backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	if sessionOf(s).Requests()-before < 3 {
		t.Fatalf("the reply was not dropped (only %d requests)", sessionOf(s).Requests()-before)
	}
	kids, err := c.Children(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 2 || kids[0].Path != n.Path {
		t.Fatalf("children %+v, want %s and warm", kids, n.Path)
	}
	_, g, err := c.Get(ctx, n.Path)
	if err != nil || g.Token != n.Token || n.Owner != s.ID() {
		t.Fatalf("node %+v, stored %+v %v", n, g, err)
	}
	if s.Err() != nil {
		t.Fatalf("session ended: %v", s.Err())
	}
}

// A session cut off the server reports itself lost before the server
// expires it.
func TestPartitionLostLocally(t *testing.T) {
	ctx := ctxT(t)
	s, p := openProxied(t, 0)
	other := openT(t, 0)
	n, err := s.Conn().Create(ctx, testPath(t), backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	defer p.Heal()
	gone := make(chan error, 1)
	go func() { gone <- other.Conn().WaitGone(ctx, n) }()
	// A call that nothing can cancel still ends with the session.
	stuck := make(chan error, 1)
	go func() {
		_, err := s.Conn().Children(context.Background(), "/")
		stuck <- err
	}()
	if err := waitDone(t, s, 10*time.Second); !errors.Is(err, baton.ErrSessionLost) {
		t.Fatalf("Err = %v, want ErrSessionLost", err)
	}
	select {
	case err := <-stuck:
		if err != nil && !baton.IsSessionGone(err) {
			t.Fatalf("Children during the partition: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a request with a background context outlived its session")
	}
	select {
	case err := <-gone:
		t.Fatalf("server removed the node (%v) before the client knew its session was lost", err)
	default:
	}
	if err := <-gone; err != nil {
		t.Fatal(err)
	}
}

func TestChroot(t *testing.T) {
	ctx := ctxT(t)
	root := testPath(t)
	s := openT(t, 0, WithChroot(root))
	plain := openT(t, 0)
	n, err := s.Conn().Create(ctx, "/locks/a", backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(n.Path, "/locks/a/_c_") {
		t.Fatalf("path %q is not relative to the chroot", n.Path)
	}
	kids, err := plain.Conn().Children(ctx, root+"/locks/a")
	if err != nil || len(kids) != 1 || kids[0].Name != n.Name {
		t.Fatalf("under the chroot: %+v %v", kids, err)
	}
	if _, g, err := s.Conn().Get(ctx, n.Path); err != nil || g.Path != n.Path || g.Token != n.Token {
		t.Fatalf("Get = %+v %v", g, err)
	}
	if _, err := Open(ctx, zktest.Shared(t).Servers(), WithChroot("relative")); !errors.Is(err, baton.ErrInvalidName) {
		t.Fatalf("relative chroot: %v", err)
	}
	for _, bad := range [][]string{nil, {""}, {zktest.Shared(t).Addr() + "/app"}, {"a:1,b:2"}} {
		if _, err := Open(ctx, bad); err == nil {
			t.Fatalf("Open(%q) succeeded", bad)
		}
	}
}

func TestCommit(t *testing.T) {
	ctx := ctxT(t)
	s := openT(t, 0)
	c := s.Conn()
	dir := testPath(t)
	guard, err := c.Create(ctx, dir+"/g", backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	item, err := c.Create(ctx, dir+"/items", "x", []byte("1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Guarded: set one node, create another in a missing dir.
	err = c.Commit(ctx, guard,
		backend.Op{Kind: backend.OpSet, Node: item, Data: []byte("2")},
		backend.Op{Kind: backend.OpCreate, Dir: dir + "/new/deep", Name: "y", Data: []byte("3")})
	if err != nil {
		t.Fatal(err)
	}
	if d, _, err := c.Get(ctx, item.Path); err != nil || string(d) != "2" {
		t.Fatalf("set: %q %v", d, err)
	}
	if d, _, err := c.Get(ctx, dir+"/new/deep/y"); err != nil || string(d) != "3" {
		t.Fatalf("create: %q %v", d, err)
	}
	// Once the guard is gone nothing applies.
	if err := c.Delete(ctx, guard); err != nil {
		t.Fatal(err)
	}
	err = c.Commit(ctx, guard, backend.Op{Kind: backend.OpDelete, Node: item})
	if !errors.Is(err, backend.ErrGuard) {
		t.Fatalf("Commit with the guard gone: %v, want ErrGuard", err)
	}
	if _, _, err := c.Get(ctx, item.Path); err != nil {
		t.Fatalf("item deleted by a refused commit: %v", err)
	}
	// Unguarded, atomic: a failing op undoes the others.
	err = c.Commit(ctx, backend.Node{},
		backend.Op{Kind: backend.OpDelete, Node: item},
		backend.Op{Kind: backend.OpCreate, Dir: dir + "/new/deep", Name: "y"})
	if !errors.Is(err, baton.ErrExists) {
		t.Fatalf("Commit creating an existing node: %v, want ErrExists", err)
	}
	if _, _, err := c.Get(ctx, item.Path); err != nil {
		t.Fatalf("item deleted by a failed commit: %v", err)
	}
}

func TestWaitChildrenAndExists(t *testing.T) {
	ctx := ctxT(t)
	a, b := openT(t, 0).Conn(), openT(t, 0).Conn()
	dir := testPath(t)
	// Missing dir: waits until a child appears.
	got := make(chan error, 1)
	go func() { got <- a.WaitChildren(ctx, dir, nil) }()
	exists := make(chan backend.Node, 1)
	go func() {
		n, err := a.WaitExists(ctx, dir+"/ready")
		if err != nil {
			t.Error(err)
		}
		exists <- n
	}()
	n, err := b.Create(ctx, dir, "ready", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if e := <-exists; e.Path != n.Path || e.Token != n.Token {
		t.Fatalf("WaitExists = %+v, want %+v", e, n)
	}
	// Differs at once from a stale listing.
	if err := a.WaitChildren(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	// A cancelled wait returns ctx's error.
	kids, err := a.Children(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := a.WaitChildren(cctx, dir, kids); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitChildren with nothing changing: %v", err)
	}
}

func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"/", "/a/b", "", "a", "/a/", "//", "/a/../b", "/\x00", "/\uf000", "/\ue000", "/\U0001F600", "/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		// Every name baton.CleanName takes, ZooKeeper takes, as its
		// absolute path: one rule for every store.
		if clean, err := baton.CleanName(p); err == nil {
			if abs, err := userPath(clean); err != nil || abs != backend.AbsolutePath(p) {
				t.Fatalf("CleanName(%q) = %q, which userPath makes %q, %v", p, clean, abs, err)
			}
		}
		err := checkPath(p)
		if err != nil {
			if !errors.Is(err, baton.ErrInvalidName) {
				t.Fatalf("%q: %v does not wrap ErrInvalidName", p, err)
			}
			return
		}
		if p == "/" {
			return
		}
		if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") || len(p) > MaxPathLen {
			t.Fatalf("accepted %q", p)
		}
		for _, r := range p {
			if r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0 {
				t.Fatalf("accepted %q with %U", p, r)
			}
		}
		for _, e := range strings.Split(p[1:], "/") {
			if e == "." || e == ".." {
				t.Fatalf("accepted %q", p)
			}
		}
	})
}

// Open gives up with ctx when no server answers, and leaves nothing
// running behind.
func TestOpenNoServer(t *testing.T) {
	addr, err := freeport.Addr() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := Open(ctx, []string{addr}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open with no server: %v", err)
	}
	await.Within(10*time.Second, func() bool { return runtime.NumGoroutine() <= before })
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines left running after a failed Open (before: %d)", n, before)
	}
}

func TestAuth(t *testing.T) {
	ctx := ctxT(t)
	dir := testPath(t)
	// A parent only user "app" may use.
	raw, _, err := gozk.Connect(zktest.Shared(t).Servers(), 10*time.Second, gozk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.AddAuth("digest", []byte("app:secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create(parent(dir), nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil && !errors.Is(err, gozk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := raw.Create(dir, nil, 0, gozk.DigestACL(gozk.PermAll, "app", "secret")); err != nil {
		t.Fatal(err)
	}
	anon := openT(t, 0)
	if _, err := anon.Conn().Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential); err == nil {
		t.Fatal("created under a protected parent without credentials")
	}
	s := openT(t, 0, WithAuth("digest", []byte("app:secret")))
	if _, err := s.Conn().Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential); err != nil {
		t.Fatalf("with credentials: %v", err)
	}
}
