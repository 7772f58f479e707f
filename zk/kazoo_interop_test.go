package zk

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/internal/zktest"
)

// The kazoo recipe interop tests run baton's recipes against kazoo's
// (Python) on one path, through testdata/interop/kazoo_peer.py: its
// WriteLock and ReadLock against RWMutex, its Barrier and DoubleBarrier.
// kazoo's Semaphore, Queue, LockingQueue and Election do not share baton's
// layouts: docs/interop.md says what baton does about each.

// kazooRecipes runs kazoo_peer.py with Debian's python3.
func kazooRecipes(t *testing.T) peer {
	const py = "/usr/bin/python3"
	out, err := exec.Command(py, "-c", "import kazoo").CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, out)
	}
	testenv.Require(t, "kazoo (/usr/bin/python3, python3-kazoo)", err)
	script, _ := filepath.Abs(filepath.Join("testdata", "interop", "kazoo_peer.py"))
	return peer{name: "kazoo", cmd: func(ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, py, append([]string{script}, args...)...)
	}}
}

// startKazoo starts the peer on one recipe and path and waits until it is
// connected.
func startKazoo(t *testing.T, ctx context.Context, p peer, recipe, path string, n int) *running {
	t.Helper()
	r := p.start(t, ctx, recipe, zktest.Shared(t).Addr(), path, fmt.Sprint(n))
	if l := r.line(t, ctx); l != "ready" {
		t.Fatalf("kazoo %s: %q, want ready", recipe, l)
	}
	return r
}

func TestInteropKazooRecipes(t *testing.T) {
	p := kazooRecipes(t)
	// The recipes kazoo shares with baton run with every spelling of the
	// name baton may be given (kazoo's is the absolute path).
	spelled := func(f func(t *testing.T, p peer, path, name string)) func(t *testing.T) {
		return func(t *testing.T) {
			eachSpelling(t, func(t *testing.T, path, name string) { f(t, p, path, name) })
		}
	}
	t.Run("WriteLock", spelled(testKazooWriteLock))
	t.Run("ReadLock", spelled(testKazooReadLock))
	t.Run("WriterBehindReader", func(t *testing.T) { testKazooWriterBehindReader(t, p) })
	t.Run("Identity", func(t *testing.T) { testKazooReadsIdentity(t, p) })
	t.Run("Barrier", spelled(testKazooBarrier))
	t.Run("DoubleBarrier", spelled(testKazooDoubleBarrier))
	t.Run("SemaphoreRefused", func(t *testing.T) { testKazooSemaphore(t, p) })
	t.Run("ElectionRefused", func(t *testing.T) { testKazooElection(t, p) })
	t.Run("QueuesFlagged", func(t *testing.T) { testKazooQueues(t, p) })
}

// statusOf reads path with the layout reader, as `baton status` does.
func statusOf(t *testing.T, ctx context.Context, s *baton.Session, path string) layout.Report {
	t.Helper()
	l, err := layout.Read(ctx, s.Conn(), layout.StoreZooKeeper, path)
	if err != nil {
		t.Fatal(err)
	}
	return layout.Describe(l, time.Now())
}

func hasWarning(r layout.Report, w string) bool {
	for _, x := range r.Warnings {
		if x == w {
			return true
		}
	}
	return false
}

// testKazooBarrier: kazoo's Barrier is the name's own node, as ours is.
func testKazooBarrier(t *testing.T, p peer, path, name string) {
	ctx := interopCtx(t)
	s := openT(t, 10*time.Second)
	k := startKazoo(t, ctx, p, "barrier", path, 1)
	k.expect(t, ctx, "create", "ok")
	b := baton.NewBarrier(s, name)
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := b.Wait(wctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on kazoo's set barrier: %v", err)
	}
	if r := statusOf(t, ctx, s, name); !r.BarrierSet {
		t.Fatalf("status of kazoo's barrier: %+v", r)
	}
	k.expect(t, ctx, "remove", "ok")
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	k.send(t, "wait")
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if l := k.line(t, ctx); l != "passed" {
		t.Fatalf("kazoo's wait: %q", l)
	}
}

// testKazooDoubleBarrier: kazoo's participants and ours count together,
// and the last one in opens it for all.
func testKazooDoubleBarrier(t *testing.T, p peer, path, name string) {
	ctx := interopCtx(t)
	s := openT(t, 10*time.Second)
	k := startKazoo(t, ctx, p, "double", path, 2)
	k.send(t, "enter")
	waitKids(t, ctx, s, name, 1)
	d := baton.NewDoubleBarrier(s, name, 2)
	if err := d.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	if l := k.line(t, ctx); l != "entered" {
		t.Fatalf("kazoo's enter: %q", l)
	}
	if r := statusOf(t, ctx, s, name); r.Participants != 2 || !r.Open {
		t.Fatalf("status of the double barrier: %+v", r)
	}
	k.send(t, "leave")
	if err := d.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if l := k.line(t, ctx); l != "left" {
		t.Fatalf("kazoo's leave: %q", l)
	}
}

// testKazooSemaphore: kazoo's Semaphore keeps NAME/<hex> leases and
// counts every child of NAME: baton refuses the name while kazoo holds
// leases, status flags it, and kazoo reads baton's nodes without crashing.
func testKazooSemaphore(t *testing.T, p peer) {
	ctx := interopCtx(t)
	path := testPath(t)
	s := openT(t, 10*time.Second)
	k := startKazoo(t, ctx, p, "semaphore", path, 2)
	k.expect(t, ctx, "acquire", "ok")
	sem := baton.NewSemaphore(s, path, 2)
	if _, err := sem.Acquire(ctx); !errors.Is(err, baton.ErrIncompatible) {
		t.Fatalf("Acquire beside kazoo's lease: %v, want ErrIncompatible", err)
	}
	if _, err := sem.TryAcquire(ctx); !errors.Is(err, baton.ErrIncompatible) {
		t.Fatalf("TryAcquire beside kazoo's lease: %v, want ErrIncompatible", err)
	}
	r := statusOf(t, ctx, s, path)
	if !hasWarning(r, layout.WarnKazooSemaphore) || r.Holders != 1 || r.Permits != 2 {
		t.Fatalf("status beside kazoo's semaphore: %+v", r)
	}
	k.expect(t, ctx, "release", "ok")

	// Ours held: kazoo reads our nodes without crashing (their data is
	// never null), but counts only NAME's children, so whether it is
	// admitted beside our lease depends on which of our directories exist:
	// the unsafe mix, which status flags once kazoo holds.
	other := testPath(t)
	if _, err := baton.NewSemaphore(s, other, 1).Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	k2 := startKazoo(t, ctx, p, "semaphore", other, 2)
	got := k2.do(t, ctx, "try")
	if got != "yes" && got != "no" {
		t.Fatalf("kazoo's try beside our semaphore: %q", got)
	}
	if got == "yes" {
		if r := statusOf(t, ctx, s, other); !hasWarning(r, layout.WarnKazooSemaphore) {
			t.Fatalf("status with kazoo admitted beside our lease: %+v", r)
		}
		k2.expect(t, ctx, "release", "ok")
	}
}

// testKazooElection: kazoo's Election (a Lock, "__lock__") ignores latch
// nodes: Campaign refuses to join it, and status flags it.
func testKazooElection(t *testing.T, p peer) {
	ctx := interopCtx(t)
	path := testPath(t)
	s := openT(t, 10*time.Second)
	k := startKazoo(t, ctx, p, "election", path, 1)
	k.send(t, "run")
	if l := k.line(t, ctx); l != "leader" {
		t.Fatalf("kazoo's run: %q", l)
	}
	if err := baton.NewElection(s, path).Campaign(ctx, []byte("us")); !errors.Is(err, baton.ErrIncompatible) {
		t.Fatalf("Campaign beside kazoo's Election: %v, want ErrIncompatible", err)
	}
	if kids := kidsOf(t, ctx, s, path); len(kids) != 1 {
		t.Fatalf("Campaign left nodes: %+v", kids)
	}
	// A LeaderLatch-layout candidate already there makes the mix visible.
	if _, err := s.Conn().Create(ctx, path, backend.KindLatch, []byte("latch"), backend.Ephemeral|backend.Sequential); err != nil {
		t.Fatal(err)
	}
	if r := statusOf(t, ctx, s, path); !hasWarning(r, layout.WarnLeaderSelector) {
		t.Fatalf("status of the mixed election: %+v", r)
	}
	k.expect(t, ctx, "resign", "ok")
}

// testKazooQueues: kazoo's Queue (entry- items) and LockingQueue
// (NAME/entries, NAME/taken) are flagged on NAME itself.
func testKazooQueues(t *testing.T, p peer) {
	ctx := interopCtx(t)
	s := openT(t, 10*time.Second)
	path := testPath(t)
	k := startKazoo(t, ctx, p, "queue", path, 1)
	k.expect(t, ctx, "put kz", "ok")
	if err := baton.NewQueue(s, path).Put(ctx, []byte("ours")); err != nil {
		t.Fatal(err)
	}
	r := statusOf(t, ctx, s, path)
	if !hasWarning(r, layout.WarnKazooQueue) || r.Items != 2 {
		t.Fatalf("status of the mixed queue: %+v", r)
	}
	k.expect(t, ctx, "get", "kz")
	k.expect(t, ctx, "get", "ours") // kazoo takes ours after its own

	lq := testPath(t)
	k2 := startKazoo(t, ctx, p, "lockingqueue", lq, 1)
	k2.expect(t, ctx, "put kz", "ok")
	r = statusOf(t, ctx, s, lq)
	if !hasWarning(r, layout.WarnKazooLocking) || r.Items != 1 {
		t.Fatalf("status of kazoo's LockingQueue: %+v", r)
	}
	if _, err := baton.NewQueue(s, lq).Poll(ctx); !errors.Is(err, baton.ErrEmpty) {
		t.Fatalf("our Poll on kazoo's LockingQueue: %v, want ErrEmpty (its items are invisible to us)", err)
	}
}

// testKazooReadsIdentity: kazoo's Lock.contenders() decodes every
// contender's data; ours carries our identity, never null data.
func testKazooReadsIdentity(t *testing.T, p peer) {
	ctx := interopCtx(t)
	path := testPath(t)
	s := openT(t, 10*time.Second).WithIdentity(baton.Identity{Host: "h1", PID: 42, Cmd: "worker"})
	m := baton.NewMutex(s, path)
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	k := startKazoo(t, ctx, p, "lock", path, 1)
	k.queueBehind(t, ctx, s, path, "acquire")
	got := startKazoo(t, ctx, p, "lock", path, 1).do(t, ctx, "contenders")
	ours, theirs, _ := strings.Cut(got, " | ")
	if id, ok := baton.ParseIdentity([]byte(ours)); !ok || id.Host != "h1" || id.PID != 42 || id.Cmd != "worker" || theirs != "kazoo-lock" {
		t.Fatalf("kazoo's contenders: %q", got)
	}
	k.handedOver(t, ctx, m.Unlock, "release")
}

// testKazooWriteLock: kazoo's WriteLock names its node "__lock__" (as its
// Lock does); baton's readers and writers must treat it as a writer.
func testKazooWriteLock(t *testing.T, p peer, path, name string) {
	ctx := interopCtx(t)
	s := openT(t, 10*time.Second)
	k := startKazoo(t, ctx, p, "writelock", path, 1)
	k.expect(t, ctx, "acquire", "ok")

	m := baton.NewRWMutex(s, name)
	if _, err := m.TryRLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryRLock under kazoo's writer: %v", err)
	}
	if _, err := m.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock under kazoo's writer: %v", err)
	}
	var released atomic.Bool
	rgot, wgot := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := m.RLock(ctx)
		if err == nil && !released.Load() {
			err = errors.New("read lock granted while kazoo held the write lock")
		}
		rgot <- err
	}()
	// The reader queues first: a writer ahead of it would make it wait
	// for our own writer, which this test releases only after the read.
	waitKids(t, ctx, s, name, 2)
	w := baton.NewRWMutex(s, name)
	go func() {
		_, err := w.Lock(ctx)
		if err == nil && !released.Load() {
			err = errors.New("write lock granted while kazoo held the write lock")
		}
		wgot <- err
	}()
	waitKids(t, ctx, s, name, 3)
	released.Store(true)
	k.expect(t, ctx, "release", "ok")
	if err := <-rgot; err != nil {
		t.Fatal(err)
	}
	if err := m.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-wgot; err != nil {
		t.Fatal(err)
	}

	// Our writer excludes kazoo's writer until we release.
	k.expect(t, ctx, "try", "no")
	k.queueBehind(t, ctx, s, name, "acquire")
	k.handedOver(t, ctx, w.Unlock, "release")
}

// testKazooWriterBehindReader: a kazoo writer queued behind our reader
// waits for it, and status calls it a waiter, not a holder.
func testKazooWriterBehindReader(t *testing.T, p peer) {
	ctx := interopCtx(t)
	path := testPath(t)
	s := openT(t, 10*time.Second)
	m := baton.NewRWMutex(s, path)
	if _, err := m.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	k := startKazoo(t, ctx, p, "writelock", path, 1)
	k.queueBehind(t, ctx, s, path, "acquire")
	r := statusOf(t, ctx, s, path)
	if r.Holders != 1 || r.Waiters != 1 || r.Entries[0].Role != layout.RoleHolder || r.Entries[1].Role != layout.RoleWaiter ||
		r.Entries[1].Peer != layout.PeerKazoo || r.Entries[1].Identity != "foreign" {
		t.Fatalf("status: %+v", r)
	}
	k.handedOver(t, ctx, m.RUnlock, "release")
}

// testKazooReadLock: kazoo's readers share with ours and wait for our
// writer; ours wait for nothing but writers.
func testKazooReadLock(t *testing.T, p peer, path, name string) {
	ctx := interopCtx(t)
	s := openT(t, 10*time.Second)
	k := startKazoo(t, ctx, p, "readlock", path, 1)
	k.expect(t, ctx, "acquire", "ok")
	m := baton.NewRWMutex(s, name)
	if _, err := m.TryRLock(ctx); err != nil {
		t.Fatalf("TryRLock beside kazoo's reader: %v", err)
	}
	if _, err := baton.NewRWMutex(s, name).TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock under two readers: %v", err)
	}
	k.expect(t, ctx, "release", "ok")
	if err := m.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	k.expect(t, ctx, "try", "no")
	k.queueBehind(t, ctx, s, name, "acquire")
	k.handedOver(t, ctx, m.Unlock, "release")
}
