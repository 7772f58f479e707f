package zk

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/testca"
	"github.com/batonhq/baton/internal/zktest"
)

const superPassword = "admin-secret"

// secTTL is the session timeout of the security tests, none of which is
// about expiry: long enough that TLS handshakes on a loaded machine never
// cost a session.
const secTTL = 10 * time.Second

// digest is WithAuth's digest credentials for user.
func digest(user string) Option { return WithAuth("digest", []byte(user+":pw-"+user)) }

// openAs opens a session on addr authenticated as user, creating nodes
// with CreatorACL.
func openAs(t testing.TB, addr, user string, opts ...Option) *baton.Session {
	t.Helper()
	return openAt(t, addr, secTTL, append([]Option{digest(user), WithACL(CreatorACL...)}, opts...)...)
}

// rawConn is a plain go-zookeeper client, authenticated with the given
// "user:password" digests (none: anonymous): the stranger of these tests.
func rawConn(t testing.TB, addr string, digests ...string) *gozk.Conn {
	t.Helper()
	return rawConnWith(t, addr, nil, digests...)
}

// rawConnWith is rawConn with a dialer (nil: plain TCP).
func rawConnWith(t testing.TB, addr string, dial gozk.Dialer, digests ...string) *gozk.Conn {
	t.Helper()
	if dial == nil {
		dial = net.DialTimeout
	}
	zc, events, err := gozk.Connect([]string{addr}, 10*time.Second, gozk.WithLogger(nopLogger{}), gozk.WithLogInfo(false), gozk.WithDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	deadline := time.After(20 * time.Second)
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == gozk.StateHasSession
		case <-deadline:
			t.Fatal("raw client: no session within 20s")
		}
	}
	for _, d := range digests {
		if err := zc.AddAuth("digest", []byte(d)); err != nil {
			t.Fatalf("addauth %s: %v", d, err)
		}
	}
	return zc
}

// within waits up to limit for ch to yield.
func within[T any](t testing.TB, ch <-chan T, limit time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("%s: nothing within %v", what, limit)
		var zero T
		return zero
	}
}

// TestSecurity runs the ACL and TLS tests on one server with a super
// digest and a secure client port that requires client certificates from
// the test's CA.
func TestSecurity(t *testing.T) {
	ca := testca.New(t, "baton test CA")
	cert := ca.Issue(t, "zookeeper")
	srv := zktest.Start(t, zktest.WithSuperDigest(superPassword),
		zktest.WithTLS(zktest.TLS{Cert: cert.CertFile, Key: cert.KeyFile, CA: ca.CertFile, ClientAuth: "need"}))
	t.Run("ACL", func(t *testing.T) {
		addr := srv.Addr()
		t.Run("StrangerCannotBreakLock", func(t *testing.T) { testStrangerCannotBreakLock(t, addr) })
		t.Run("SuperDeletes", func(t *testing.T) { testSuperDeletes(t, addr) })
		t.Run("SameIdentityRecipes", func(t *testing.T) { testSameIdentityRecipes(t, addr) })
		t.Run("AuthSchemeNeedsCredentials", func(t *testing.T) { testAuthSchemeNeedsCredentials(t, addr) })
		t.Run("UnsafeDir", func(t *testing.T) { testUnsafeDir(t, addr) })
		t.Run("OtherIdentitysDir", func(t *testing.T) { testOtherIdentitysDir(t, addr) })
		t.Run("RecreatedDir", func(t *testing.T) { testRecreatedDir(t, addr) })
	})
	t.Run("TLS", func(t *testing.T) { testTLS(t, srv, ca) })
}

func testStrangerCannotBreakLock(t *testing.T, addr string) {
	ctx := ctxT(t)
	path := testPath(t)
	a := openAs(t, addr, "alice")
	m := baton.NewMutex(a, path)
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kids, err := a.Conn().Children(ctx, path)
	if err != nil || len(kids) != 1 {
		t.Fatalf("children = %v, %v", kids, err)
	}
	node := kids[0].Path

	for _, who := range []struct {
		name    string
		digests []string
	}{{"mallory", []string{"mallory:pw"}}, {"anonymous", nil}} {
		zc := rawConn(t, addr, who.digests...)
		if _, _, err := zc.Get(node); err != nil {
			t.Errorf("%s: read %s: %v (CreatorACL lets anyone read)", who.name, node, err)
		}
		for _, op := range []struct {
			what string
			err  error
		}{
			{"delete node", zc.Delete(node, -1)},
			{"delete dir", zc.Delete(path, -1)},
			{"set node data", func() error { _, err := zc.Set(node, []byte("x"), -1); return err }()},
			{"set dir data", func() error { _, err := zc.Set(path, []byte("x"), -1); return err }()},
			{"open node ACL", func() error { _, err := zc.SetACL(node, gozk.WorldACL(gozk.PermAll), -1); return err }()},
			{"open dir ACL", func() error { _, err := zc.SetACL(path, gozk.WorldACL(gozk.PermAll), -1); return err }()},
			{"create in dir", func() error {
				_, err := zc.Create(path+"/_c_x-lock-", nil, gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
				return err
			}()},
		} {
			if !errors.Is(op.err, gozk.ErrNoAuth) {
				t.Errorf("%s: %s: err = %v, want ErrNoAuth", who.name, op.what, op.err)
			}
		}
	}

	// A stranger using baton cannot even join the line: a clear error.
	mal := openAs(t, addr, "mallory")
	_, err = baton.NewMutex(mal, path).Lock(ctx)
	if !errors.Is(err, gozk.ErrNoAuth) || !errors.Is(err, baton.ErrPermission) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "ACL") {
		t.Fatalf("mallory's Lock: err = %v, want ErrNoAuth and baton.ErrPermission naming %s and the ACL", err, path)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("alice's lease after the attempts: %v", err)
	}

	// Alice's other sessions still queue behind her and get the lock in
	// order, each passing it on.
	const waiters = 3
	type grant struct {
		i     int
		token int64
		err   error
	}
	got := make(chan grant, waiters)
	for i := 0; i < waiters; i++ {
		w := baton.NewMutex(openAs(t, addr, "alice"), path)
		go func() {
			wl, err := w.Lock(ctx)
			if err != nil {
				got <- grant{i: i, err: err}
				return
			}
			got <- grant{i: i, token: wl.Token()}
			if err := w.Unlock(ctx); err != nil {
				got <- grant{i: i, err: err}
			}
		}()
		waitKids(t, ctx, a, path, i+2)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	last := l.Token()
	for want := 0; want < waiters; want++ {
		g := within(t, got, 20*time.Second, "waiter")
		if g.err != nil {
			t.Fatalf("waiter %d: %v", g.i, g.err)
		}
		if g.i != want || g.token <= last {
			t.Fatalf("grant %d went to waiter %d with token %d (previous %d): want FIFO, increasing tokens", want, g.i, g.token, last)
		}
		last = g.token
	}
}

func testSuperDeletes(t *testing.T, addr string) {
	ctx := ctxT(t)
	path := testPath(t)
	a := openAs(t, addr, "alice")
	admin := rawConn(t, addr, zktest.SuperUser+":"+superPassword)

	// A leader whose node the admin deletes learns it lost.
	e := baton.NewElection(a, path+"/election")
	if err := e.Campaign(ctx, []byte("alice")); err != nil {
		t.Fatal(err)
	}
	leader := kidsOf(t, ctx, a, path+"/election")[0].Path
	if err := admin.Delete(leader, -1); err != nil {
		t.Fatalf("super deletes %s: %v", leader, err)
	}
	within(t, e.Lease().Done(), 10*time.Second, "leader's lease after the admin's delete")
	if err := e.Lease().Err(); !errors.Is(err, baton.ErrLost) {
		t.Fatalf("leader's lease: %v, want ErrLost", err)
	}

	// A lock whose holder's node the admin deletes passes to the next in
	// line (the admin's way to break a stuck lock).
	m := baton.NewMutex(a, path+"/lock")
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	w := baton.NewMutex(openAs(t, addr, "alice"), path+"/lock")
	got := make(chan error, 1)
	go func() {
		_, err := w.Lock(ctx)
		got <- err
	}()
	kids := waitKids(t, ctx, a, path+"/lock", 2)
	if err := admin.Delete(kids[0].Path, -1); err != nil {
		t.Fatalf("super deletes %s: %v", kids[0].Path, err)
	}
	if err := within(t, got, 10*time.Second, "waiter after the admin's delete"); err != nil {
		t.Fatal(err)
	}
}

func testSameIdentityRecipes(t *testing.T, addr string) {
	ctx := ctxT(t)
	path := testPath(t)
	s1, s2 := openAs(t, addr, "alice"), openAs(t, addr, "alice")

	m1, m2 := baton.NewMutex(s1, path+"/mutex"), baton.NewMutex(s2, path+"/mutex")
	if _, err := m1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m2.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock while held: %v, want ErrLocked", err)
	}
	if err := m1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// Every node baton made carries CreatorACL for alice. (The admin reads
	// the digests: ZooKeeper shows others "alice:x".)
	zc := rawConn(t, addr, zktest.SuperUser+":"+superPassword)
	for _, p := range []string{"/baton-test", path, path + "/mutex", kidsOf(t, ctx, s1, path+"/mutex")[0].Path} {
		acl, _, err := zc.GetACL(p)
		if err != nil {
			t.Fatal(err)
		}
		want := []gozk.ACL{gozk.DigestACL(gozk.PermAll, "alice", "pw-alice")[0], CreatorACL[1]}
		if len(acl) != 2 || acl[0] != want[0] || acl[1] != want[1] {
			t.Errorf("ACL of %s = %v, want %v", p, acl, want)
		}
	}
	if err := m2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	rw1, rw2 := baton.NewRWMutex(s1, path+"/rw"), baton.NewRWMutex(s2, path+"/rw")
	if _, err := rw1.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rw2.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rw1.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rw2.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rw2.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rw2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	sem1, sem2 := baton.NewSemaphore(s1, path+"/sem", 1), baton.NewSemaphore(s2, path+"/sem", 1)
	l1, err := sem1.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := sem2.Acquire(ctx)
		if err == nil {
			err = sem2.Release(ctx, l)
		}
		got <- err
	}()
	if err := sem1.Release(ctx, l1); err != nil {
		t.Fatal(err)
	}
	if err := within(t, got, 20*time.Second, "second permit"); err != nil {
		t.Fatal(err)
	}

	e1, e2 := baton.NewElection(s1, path+"/election"), baton.NewElection(s2, path+"/election")
	if err := e1.Campaign(ctx, []byte("one")); err != nil {
		t.Fatal(err)
	}
	v, _, err := e2.Leader(ctx)
	if err != nil || string(v) != "one" {
		t.Fatalf("Leader = %q, %v", v, err)
	}
	if err := e1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e2.Campaign(ctx, []byte("two")); err != nil {
		t.Fatal(err)
	}

	q1, q2 := baton.NewQueue(s1, path+"/queue"), baton.NewQueue(s2, path+"/queue")
	if err := q1.Put(ctx, []byte("item")); err != nil {
		t.Fatal(err)
	}
	if b, err := q2.Take(ctx); err != nil || string(b) != "item" {
		t.Fatalf("Take = %q, %v", b, err)
	}
}

func testAuthSchemeNeedsCredentials(t *testing.T, addr string) {
	ctx := ctxT(t)
	_, err := Open(ctx, []string{addr}, WithACL(CreatorACL...))
	if err == nil || !strings.Contains(err.Error(), "WithAuth") {
		t.Fatalf("Open with the auth scheme and no credentials: %v, want an error naming WithAuth", err)
	}
	if _, err := Open(ctx, []string{addr}, WithACL()); err == nil {
		t.Fatal("Open with an empty WithACL: no error")
	}
	// An ACL the server refuses (a digest id without its hash).
	s := openAt(t, addr, secTTL, digest("alice"), WithACL(gozk.ACL{Perms: gozk.PermAll, Scheme: "digest", ID: "alice"}))
	_, err = baton.NewMutex(s, "/bad-acl-"+strings.ReplaceAll(t.Name(), "/", "_")).Lock(ctx)
	if !errors.Is(err, gozk.ErrInvalidACL) || !strings.Contains(err.Error(), "refused the ACL") {
		t.Fatalf("Lock with an invalid ACL: %v, want ErrInvalidACL", err)
	}
}

func testUnsafeDir(t *testing.T, addr string) {
	ctx := ctxT(t)
	root := "/open-" + strings.ReplaceAll(t.Name(), "/", "_")
	anon := rawConn(t, addr)
	if _, err := anon.Create(root, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	a := openAs(t, addr, "alice")
	_, err := baton.NewMutex(a, root).Lock(ctx)
	if !errors.Is(err, ErrUnsafeACL) || !strings.Contains(err.Error(), "world:anyone:cdrwa") {
		t.Fatalf("Lock in a world-open dir: %v, want ErrUnsafeACL naming world:anyone:cdrwa", err)
	}
	if kids := kidsOf(t, ctx, a, root); len(kids) != 0 {
		t.Fatalf("nodes left in %s: %v", root, kids)
	}

	// A dir the admin shares between alice and an operator: refused unless
	// alice names the operator in her ACL.
	shared := root + "/shared"
	admin := rawConn(t, addr, zktest.SuperUser+":"+superPassword)
	ops := gozk.DigestACL(gozk.PermAll, "ops", "pw-ops")[0]
	alice := gozk.DigestACL(gozk.PermAll, "alice", "pw-alice")[0]
	if _, err := admin.Create(shared, nil, 0, []gozk.ACL{alice, ops}); err != nil {
		t.Fatal(err)
	}
	_, err = baton.NewMutex(a, shared).Lock(ctx)
	if !errors.Is(err, ErrUnsafeACL) || !strings.Contains(err.Error(), "digest:ops:") {
		t.Fatalf("Lock in a dir shared with ops: %v, want ErrUnsafeACL naming digest:ops", err)
	}
	b := openAt(t, addr, secTTL, digest("alice"), WithACL(append(CreatorACL, ops)...))
	m := baton.NewMutex(b, shared)
	if _, err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock with ops named in the ACL: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func testOtherIdentitysDir(t *testing.T, addr string) {
	ctx := ctxT(t)
	path := "/bob-" + strings.ReplaceAll(t.Name(), "/", "_") + "/lock"
	m := baton.NewMutex(openAs(t, addr, "bob"), path)
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := baton.NewMutex(openAs(t, addr, "alice"), path).Lock(ctx)
	if !errors.Is(err, gozk.ErrNoAuth) || !errors.Is(err, baton.ErrPermission) || !strings.Contains(err.Error(), "another identity") {
		t.Fatalf("alice's Lock in bob's dir: %v, want ErrNoAuth saying it belongs to another identity", err)
	}
}

func TestTrusted(t *testing.T) {
	ca := testca.New(t, "trust CA")
	cert := ca.Issue(t, "alice")
	ops := gozk.DigestACL(gozk.PermAll, "ops", "pw-ops")[0]
	o := options{acl: append(append([]gozk.ACL{}, CreatorACL...), ops)}
	digest("alice")(&o)
	WithTLS(ca.ClientConfig(t, &cert))(&o)
	tr := newTrusted(&o)
	alice := gozk.DigestACL(gozk.PermAll, "alice", "pw-alice")[0]
	for _, tc := range []struct {
		e            gozk.ACL
		allows, isUs bool
	}{
		{alice, true, true},
		{gozk.ACL{Perms: gozk.PermAll, Scheme: "digest", ID: "alice:x"}, true, true}, // hash hidden by the server
		{gozk.DigestACL(gozk.PermAll, "alice", "other")[0], false, false},
		{ops, true, false},
		{gozk.DigestACL(gozk.PermAll, "mallory", "pw")[0], false, false},
		{gozk.DigestACL(gozk.PermRead|gozk.PermCreate|gozk.PermWrite, "mallory", "pw")[0], true, false},
		{gozk.WorldACL(gozk.PermAll)[0], false, true},
		{gozk.WorldACL(gozk.PermRead)[0], true, true},
		{gozk.ACL{Perms: gozk.PermAll, Scheme: "x509", ID: "CN=alice"}, false, true}, // a certificate may be shared
		{gozk.ACL{Perms: gozk.PermAll, Scheme: "ip", ID: "127.0.0.1"}, false, false},
	} {
		if got := tr.allows(tc.e); got != tc.allows {
			t.Errorf("allows(%s) = %v, want %v", aclString(tc.e), got, tc.allows)
		}
		if got := tr.isUs(tc.e); got != tc.isUs {
			t.Errorf("isUs(%s) = %v, want %v", aclString(tc.e), got, tc.isUs)
		}
	}
	got := expandAuth(o.acl, o.auth)
	want := []gozk.ACL{alice, CreatorACL[1], ops}
	if !slices.Equal(got, want) {
		t.Errorf("expandAuth = %v, want %v", got, want)
	}
	if s := aclString(gozk.WorldACL(gozk.PermRead | gozk.PermDelete)[0]); s != "world:anyone:dr" {
		t.Errorf("aclString = %q", s)
	}
}

// testRecreatedDir: a lock directory the session checked before, emptied
// and recreated open by a stranger (its parent is open to all), is checked
// again: the next Lock fails and leaves nothing, rather than put the
// holder's node where the stranger may delete it.
func testRecreatedDir(t *testing.T, addr string) {
	ctx := ctxT(t)
	root := "/open-" + strings.ReplaceAll(t.Name(), "/", "_")
	anon := rawConn(t, addr)
	if _, err := anon.Create(root, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	path := root + "/lock"
	a := openAs(t, addr, "alice")
	m := baton.NewMutex(a, path)
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := anon.Delete(path, -1); err != nil && !errors.Is(err, gozk.ErrNoNode) {
		t.Fatalf("stranger deletes the empty lock dir: %v", err)
	}
	if _, err := anon.Create(path, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, err := m.Lock(ctx)
	if !errors.Is(err, ErrUnsafeACL) {
		t.Fatalf("Lock in the recreated open dir: %v, want ErrUnsafeACL", err)
	}
	if kids := kidsOf(t, ctx, a, path); len(kids) != 0 {
		t.Fatalf("nodes left in %s: %v", path, kids)
	}
}
