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

	"github.com/batonhq/baton"
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
	require(t, "kazoo (/usr/bin/python3, python3-kazoo)", err)
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
	t.Run("WriteLock", func(t *testing.T) { testKazooWriteLock(t, p) })
	t.Run("ReadLock", func(t *testing.T) { testKazooReadLock(t, p) })
	t.Run("Identity", func(t *testing.T) { testKazooReadsIdentity(t, p) })
}

// testKazooReadsIdentity: kazoo's Lock.contenders() decodes every
// contender's data; ours carries our identity, never null data.
func testKazooReadsIdentity(t *testing.T, p peer) {
	ctx := interopCtx(t)
	path := testPath(t)
	s := openT(t, 0).WithIdentity(baton.Identity{Host: "h1", PID: 42, Cmd: "worker"})
	m := baton.NewMutex(s, path)
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	k := startKazoo(t, ctx, p, "lock", path, 1)
	k.send(t, "acquire")
	waitKids(t, ctx, s, path, 2)
	got := startKazoo(t, ctx, p, "lock", path, 1).do(t, ctx, "contenders")
	ours, theirs, _ := strings.Cut(got, " | ")
	if id, ok := baton.ParseIdentity([]byte(ours)); !ok || id.Host != "h1" || id.PID != 42 || id.Cmd != "worker" || theirs != "kazoo-lock" {
		t.Fatalf("kazoo's contenders: %q", got)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if l := k.line(t, ctx); l != "ok" {
		t.Fatalf("kazoo's acquire: %q", l)
	}
	k.expect(t, ctx, "release", "ok")
}

// testKazooWriteLock: kazoo's WriteLock names its node "__lock__" (as its
// Lock does); baton's readers and writers must treat it as a writer.
func testKazooWriteLock(t *testing.T, p peer) {
	ctx := interopCtx(t)
	path := testPath(t)
	s := openT(t, 0)
	k := startKazoo(t, ctx, p, "writelock", path, 1)
	k.expect(t, ctx, "acquire", "ok")

	m := baton.NewRWMutex(s, path)
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
	w := baton.NewRWMutex(s, path)
	go func() {
		_, err := w.Lock(ctx)
		if err == nil && !released.Load() {
			err = errors.New("write lock granted while kazoo held the write lock")
		}
		wgot <- err
	}()
	waitKids(t, ctx, s, path, 3)
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
	k.send(t, "acquire")
	waitKids(t, ctx, s, path, 2)
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if l := k.line(t, ctx); l != "ok" {
		t.Fatalf("kazoo's acquire: %q", l)
	}
	k.expect(t, ctx, "release", "ok")
}

// testKazooReadLock: kazoo's readers share with ours and wait for our
// writer; ours wait for nothing but writers.
func testKazooReadLock(t *testing.T, p peer) {
	ctx := interopCtx(t)
	path := testPath(t)
	s := openT(t, 0)
	k := startKazoo(t, ctx, p, "readlock", path, 1)
	k.expect(t, ctx, "acquire", "ok")
	m := baton.NewRWMutex(s, path)
	if _, err := m.TryRLock(ctx); err != nil {
		t.Fatalf("TryRLock beside kazoo's reader: %v", err)
	}
	if _, err := baton.NewRWMutex(s, path).TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
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
	k.send(t, "acquire")
	waitKids(t, ctx, s, path, 2)
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if l := k.line(t, ctx); l != "ok" {
		t.Fatalf("kazoo's acquire: %q", l)
	}
	k.expect(t, ctx, "release", "ok")
}
