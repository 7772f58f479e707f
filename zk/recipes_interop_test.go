package zk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/internal/zktest"
)

// The recipe interop tests run baton's recipes against Apache Curator's
// (InterProcessReadWriteLock, InterProcessSemaphoreV2, LeaderLatch,
// DistributedBarrier, DistributedDoubleBarrier) and ZooKeeper's own
// DistributedQueue on one path: each side sees the other's nodes and obeys
// them.

// recipesPeer compiles testdata/interop/RecipesPeer.java against Debian's
// jars.
func recipesPeer(t *testing.T) peer {
	return javaPeer(t, "RecipesPeer", "Curator and ZooKeeper recipes (javac, libcurator-recipes-java, libzookeeper-java)",
		"curator-recipes.jar", "curator-framework.jar", "curator-client.jar",
		"zookeeper.jar", "zookeeper-jute.jar", "zookeeper-recipes-queue.jar", "slf4j-nop.jar")
}

// javaPeer compiles testdata/interop/<class>.java against Debian's jars
// (in javaDir) and runs it; what names the packages for a missing one.
func javaPeer(t *testing.T, class, what string, jars ...string) peer {
	_, err := exec.LookPath("javac")
	var cp []string
	for _, j := range jars {
		p := filepath.Join(javaDir, j)
		if err == nil {
			_, err = os.Stat(p)
		}
		cp = append(cp, p)
	}
	testenv.Require(t, what, err)
	classes := t.TempDir()
	classpath := strings.Join(cp, ":")
	out, err := exec.Command("javac", "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-d", classes, "-cp", classpath, filepath.Join("testdata", "interop", class+".java")).CombinedOutput()
	if err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return peer{name: "java", cmd: func(ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, "java", append([]string{"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classes + ":" + classpath, class}, args...)...)
	}}
}

// startJava starts the peer on one recipe and path and waits until it is
// connected.
func startJava(t *testing.T, ctx context.Context, p peer, recipe, path string, n int) *running {
	t.Helper()
	r := p.start(t, ctx, zktest.Shared(t).Addr(), recipe, path, fmt.Sprint(n))
	if l := r.line(t, ctx); l != "ready" {
		t.Fatalf("java %s: %q, want ready", recipe, l)
	}
	return r
}

// send writes one command to the peer.
func (r *running) send(t *testing.T, cmd string) {
	t.Helper()
	if _, err := fmt.Fprintln(r.stdin, cmd); err != nil {
		t.Fatalf("java: %v", err)
	}
}

// do sends cmd and returns the answer.
func (r *running) do(t *testing.T, ctx context.Context, cmd string) string {
	t.Helper()
	r.send(t, cmd)
	return r.line(t, ctx)
}

// expect sends cmd and fails unless the answer is want.
func (r *running) expect(t *testing.T, ctx context.Context, cmd, want string) {
	t.Helper()
	if got := r.do(t, ctx, cmd); got != want {
		t.Fatalf("java %s: %q, want %q", cmd, got, want)
	}
}

// queueBehind sends cmd, a lock request the peer answers "ok" once it
// holds, and waits until the peer's node is the second under path, behind
// ours.
func (r *running) queueBehind(t *testing.T, ctx context.Context, s *baton.Session, path, cmd string) {
	t.Helper()
	r.send(t, cmd)
	waitKids(t, ctx, s, path, 2)
}

// handedOver releases our lock with unlock and wants the peer queued
// behind it (queueBehind) to answer "ok", then to release with cmd.
func (r *running) handedOver(t *testing.T, ctx context.Context, unlock func(context.Context) error, release string) {
	t.Helper()
	if err := unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if l := r.line(t, ctx); l != "ok" {
		t.Fatalf("the peer's lock request after our release: %q, want ok", l)
	}
	r.expect(t, ctx, release, "ok")
}

// kidsOf lists dir as baton parses it.
func kidsOf(t *testing.T, ctx context.Context, s *baton.Session, dir string) []backend.Node {
	t.Helper()
	kids, err := s.Conn().Children(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	return kids
}

// waitKids waits, on a watch of dir, until it has n children.
func waitKids(t *testing.T, ctx context.Context, s *baton.Session, dir string, n int) []backend.Node {
	t.Helper()
	return await.Children(t, ctx, s.Conn(), dir, 20*time.Second, fmt.Sprintf("%d children in %s", n, dir),
		func(kids []backend.Node) bool { return len(kids) == n })
}

const uuidRe = `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`

var (
	curatorRead  = regexp.MustCompile(`^_c_` + uuidRe + `-__READ__\d{10}$`)
	curatorWrite = regexp.MustCompile(`^_c_` + uuidRe + `-__WRIT__\d{10}$`)
	curatorLease = regexp.MustCompile(`^_c_` + uuidRe + `-lease-\d{10}$`)
	curatorLatch = regexp.MustCompile(`^_c_` + uuidRe + `-latch-\d{10}$`)
	zkQueueItem  = regexp.MustCompile(`^qn-\d{10}$`)
)

func TestInteropRecipes(t *testing.T) {
	p := recipesPeer(t)
	// The recipes the peer shares with baton run with every spelling of
	// the name baton may be given (the peer's is the absolute path).
	spelled := func(f func(t *testing.T, p peer, path, name string)) func(t *testing.T) {
		return func(t *testing.T) {
			eachSpelling(t, func(t *testing.T, path, name string) { f(t, p, path, name) })
		}
	}
	t.Run("RWMutex", spelled(testInteropRWMutex))
	t.Run("Semaphore", spelled(testInteropSemaphore))
	t.Run("LeaderLatch", spelled(testInteropLatch))
	t.Run("Barrier", spelled(testInteropBarrier))
	t.Run("DoubleBarrier", spelled(testInteropDoubleBarrier))
	t.Run("Queue", spelled(testInteropQueue))
	t.Run("CuratorQueueFlagged", func(t *testing.T) { testInteropCuratorQueue(t, p) })
}

func testInteropRWMutex(t *testing.T, p peer, path, name string) {
	ctx := interopCtx(t)
	s := openT(t, 0)
	j := startJava(t, ctx, p, "rwmutex", path, 1)

	// Curator's writer excludes our reader until it releases.
	j.expect(t, ctx, "wlock", "ok")
	kids := kidsOf(t, ctx, s, name)
	if len(kids) != 1 || kids[0].Kind != backend.KindWrite || !curatorWrite.MatchString(kids[0].Name) {
		t.Fatalf("Curator's writer parsed as %+v", kids)
	}
	m := baton.NewRWMutex(s, name)
	if _, err := m.TryRLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryRLock under Curator's writer: %v", err)
	}
	var released atomic.Bool
	got := make(chan error, 1)
	go func() {
		_, err := m.RLock(ctx)
		if err == nil && !released.Load() {
			err = errors.New("read lock granted while Curator held the write lock")
		}
		got <- err
	}()
	kids = waitKids(t, ctx, s, name, 2)
	if !curatorRead.MatchString(kids[1].Name) {
		t.Fatalf("our reader %q is not in Curator's layout", kids[1].Name)
	}
	released.Store(true)
	j.expect(t, ctx, "wunlock", "ok")
	if err := <-got; err != nil {
		t.Fatal(err)
	}

	// Our reader shares with Curator's readers and excludes its writers.
	j.expect(t, ctx, "tryr", "yes")
	j.expect(t, ctx, "runlock", "ok")
	j.expect(t, ctx, "tryw", "no")
	if err := m.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Our writer excludes Curator's reader until we release.
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := kidsOf(t, ctx, s, name); !curatorWrite.MatchString(n[0].Name) {
		t.Fatalf("our writer %q is not in Curator's layout", n[0].Name)
	}
	j.queueBehind(t, ctx, s, name, "rlock")
	j.handedOver(t, ctx, m.Unlock, "runlock")
}

func testInteropSemaphore(t *testing.T, p peer, path, name string) {
	ctx := interopCtx(t)
	s := openT(t, 0)
	j := startJava(t, ctx, p, "semaphore", path, 1)
	sem := baton.NewSemaphore(s, name, 1)

	j.expect(t, ctx, "acquire", "ok")
	leases := kidsOf(t, ctx, s, backend.Join(name, "leases"))
	if len(leases) != 1 || leases[0].Kind != backend.KindLease || !curatorLease.MatchString(leases[0].Name) {
		t.Fatalf("Curator's lease parsed as %+v", leases)
	}
	if _, err := sem.TryAcquire(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryAcquire with Curator holding the only permit: %v", err)
	}
	var released atomic.Bool
	got := make(chan *baton.Lease, 1)
	go func() {
		l, err := sem.Acquire(ctx)
		if err != nil || !released.Load() {
			t.Errorf("Acquire: %v (before Curator released: %v)", err, !released.Load())
		}
		got <- l
	}()
	waitKids(t, ctx, s, backend.Join(name, "leases"), 2)
	released.Store(true)
	j.expect(t, ctx, "release", "ok")
	l := <-got
	if l == nil {
		t.FailNow()
	}
	j.expect(t, ctx, "try", "no")
	if err := sem.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	j.expect(t, ctx, "try", "yes")
	j.expect(t, ctx, "release", "ok")
}

func testInteropLatch(t *testing.T, p peer, path, name string) {
	ctx := interopCtx(t)
	s := openT(t, 0)
	e := baton.NewElection(s, name)

	j := startJava(t, ctx, p, "latch", path, 1)
	j.expect(t, ctx, "start", "ok")
	j.expect(t, ctx, "await", "leader")
	val, node, err := e.Leader(ctx)
	if err != nil || string(val) != "java" || !curatorLatch.MatchString(node.Name) {
		t.Fatalf("Leader with Curator leading: %q %q %v", val, node.Name, err)
	}
	won := make(chan error, 1)
	go func() { won <- e.Campaign(ctx, []byte("go")) }()
	waitKids(t, ctx, s, name, 2)
	j.expect(t, ctx, "has", "yes")
	j.expect(t, ctx, "close", "ok")
	if err := <-won; err != nil {
		t.Fatal(err)
	}

	// A new Curator latch waits behind us.
	j2 := startJava(t, ctx, p, "latch", path, 1)
	j2.expect(t, ctx, "start", "ok")
	waitKids(t, ctx, s, name, 2)
	j2.expect(t, ctx, "has", "no")
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	j2.expect(t, ctx, "await", "leader")
	j2.expect(t, ctx, "close", "ok")
}

func testInteropBarrier(t *testing.T, p peer, path, name string) {
	ctx := interopCtx(t)
	path, name = path+"/barrier", name+"/barrier"
	s := openT(t, 0)
	b := baton.NewBarrier(s, name)
	j := startJava(t, ctx, p, "barrier", path, 1)

	j.expect(t, ctx, "set", "ok")
	passed := make(chan error, 1)
	go func() { passed <- b.Wait(ctx) }()
	select {
	case err := <-passed:
		t.Fatalf("Wait returned %v with Curator's barrier up", err)
	case <-time.After(300 * time.Millisecond): // a negative: give it a moment
	}
	j.expect(t, ctx, "remove", "ok")
	if err := <-passed; err != nil {
		t.Fatal(err)
	}
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	j.expect(t, ctx, "try", "no")
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	j.expect(t, ctx, "try", "yes")
}

func testInteropDoubleBarrier(t *testing.T, p peer, path, name string) {
	ctx := interopCtx(t)
	const n = 3
	j := startJava(t, ctx, p, "double", path, n)
	j.send(t, "enter")
	done := make(chan error, n-1)
	for range n - 1 {
		s := openT(t, 0)
		go func() {
			d := baton.NewDoubleBarrier(s, name, n)
			err := d.Enter(ctx)
			if err == nil {
				err = d.Leave(ctx)
			}
			done <- err
		}()
	}
	if l := j.line(t, ctx); l != "entered" {
		t.Fatalf("Curator's enter: %q", l)
	}
	// Our participants cannot leave before Curator's has.
	select {
	case err := <-done:
		t.Fatalf("a Go participant left (%v) while Curator's was inside", err)
	case <-time.After(300 * time.Millisecond): // a negative: give it a moment
	}
	j.expect(t, ctx, "leave", "left")
	for range n - 1 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if l := j.do(t, ctx, "nodes"); l != "" {
		t.Fatalf("left behind: %s", l)
	}
}

func testInteropQueue(t *testing.T, p peer, path, name string) {
	ctx := interopCtx(t)
	s := openT(t, 0)
	q := baton.NewQueue(s, name)
	j := startJava(t, ctx, p, "queue", path, 1)

	// ZooKeeper's DistributedQueue does not create its directory: our Put
	// does.
	if err := q.Put(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"b", "c"} {
		j.expect(t, ctx, "put "+v, "ok")
	}
	for _, k := range kidsOf(t, ctx, s, name) {
		if k.Kind != backend.KindQueue || !zkQueueItem.MatchString(k.Name) {
			t.Fatalf("ZooKeeper's queue item parsed as %+v", k)
		}
	}
	for _, want := range []string{"a", "b"} {
		if v, err := q.Take(ctx); err != nil || string(v) != want {
			t.Fatalf("Take: %q %v, want %s", v, err, want)
		}
	}
	if v, err := q.Poll(ctx); err != nil || string(v) != "c" {
		t.Fatalf("Poll: %q %v, want c", v, err)
	}
	for _, v := range []string{"x", "y"} {
		if err := q.Put(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range kidsOf(t, ctx, s, name) {
		// Our Takes claimed their items in the claims directory (as
		// ReliableQueue does), which ZooKeeper's consumer skips (it
		// warns of a child with an improper name), as the takes below
		// show.
		if !zkQueueItem.MatchString(k.Name) && k.Name != "claims" {
			t.Fatalf("our queue item %q is not in ZooKeeper's layout", k.Name)
		}
	}
	j.expect(t, ctx, "take", "x")
	j.expect(t, ctx, "poll", "y")
	j.expect(t, ctx, "poll", "empty")
	if _, err := q.Poll(ctx); !errors.Is(err, baton.ErrEmpty) {
		t.Fatalf("Poll: %v, want ErrEmpty", err)
	}
}

// testInteropCuratorQueue: Curator's own DistributedQueue keeps its items
// as queue-<seq>, which neither baton's Queue nor Curator's sees of the
// other: status flags the name, and each side takes only its own items.
func testInteropCuratorQueue(t *testing.T, p peer) {
	ctx := interopCtx(t)
	path := testPath(t)
	s := openT(t, 0)
	q := baton.NewQueue(s, path)
	j := startJava(t, ctx, p, "cqueue", path, 1)
	for _, v := range []string{"c1", "c2"} {
		j.expect(t, ctx, "put "+v, "ok")
	}
	if err := q.Put(ctx, []byte("ours")); err != nil {
		t.Fatal(err)
	}
	r := statusOf(t, ctx, s, path)
	if !hasWarning(r, layout.WarnCuratorQueue) || r.Items != 3 || len(r.Entries) != 3 {
		t.Fatalf("status of the mixed queue: %+v", r)
	}
	for _, e := range r.Entries[:2] {
		if e.Recipe != layout.RecipeCuratorQueue || e.Role != layout.RoleItem || e.Peer != layout.PeerCurator || len(e.Flags) != 0 {
			t.Fatalf("Curator's item in status: %+v", e)
		}
	}
	if e := r.Entries[2]; e.Recipe != layout.RecipeQueue || e.Role != layout.RoleItem {
		t.Fatalf("our item in status: %+v", e)
	}
	if v, err := q.Poll(ctx); err != nil || string(v) != "ours" {
		t.Fatalf("Poll: %q %v, want ours", v, err)
	}
	if v, err := q.Poll(ctx); !errors.Is(err, baton.ErrEmpty) {
		t.Fatalf("Poll: %q %v, want ErrEmpty (Curator's items are not ours)", v, err)
	}
	// Curator's consumer takes its own items only.
	if err := q.Put(ctx, []byte("ours2")); err != nil {
		t.Fatal(err)
	}
	c := startJava(t, ctx, p, "cqueue", path, 2)
	for _, want := range []string{"took c1", "took c2"} {
		if l := c.line(t, ctx); l != want {
			t.Fatalf("Curator's consumer: %q, want %q", l, want)
		}
	}
	if v, err := q.Poll(ctx); err != nil || string(v) != "ours2" {
		t.Fatalf("Poll after Curator's consumer ran: %q %v, want ours2", v, err)
	}
}
