package zk

import (
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/zktest"
)

// counterPeer compiles testdata/interop/CounterPeer.java against Debian's
// jars.
func counterPeer(t *testing.T) peer {
	return javaPeer(t, "CounterPeer", "Curator (javac, libcurator-recipes-java, libguava-java)",
		"curator-recipes.jar", "curator-framework.jar", "curator-client.jar",
		"zookeeper.jar", "zookeeper-jute.jar", "guava.jar", "slf4j-nop.jar")
}

// startCounter starts the peer on path and waits until it is ready.
func startCounter(t *testing.T, p peer, path string) *running {
	t.Helper()
	ctx := interopCtx(t)
	r := p.start(t, ctx, zktest.Shared(t).Addr(), path)
	if l := r.line(t, ctx); l != "ready" {
		t.Fatalf("java: %q, want ready", l)
	}
	return r
}

// TestInteropSharedCount: baton's SharedCount and Curator's on one node
// read each other's writes (4-byte big-endian int), a TrySet at a
// version read before Curator's write is refused, and Curator's listener
// hears baton's Set.
func TestInteropSharedCount(t *testing.T) {
	p := counterPeer(t)
	ctx := interopCtx(t)
	s := openT(t, 10*time.Second)
	path := testPath(t)
	j := startCounter(t, p, path)
	c := baton.NewSharedCount(s, path, 0)
	if err := c.Set(ctx, 42); err != nil {
		t.Fatal(err)
	}
	j.expect(t, ctx, "count-get", "42")
	before, err := c.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j.expect(t, ctx, "count-set -7", "ok")
	if v, err := c.Get(ctx); err != nil || v.Value != -7 {
		t.Fatalf("baton reads Curator's count: %+v %v, want -7", v, err)
	}
	if ok, err := c.TrySet(ctx, before, 1); ok || err != nil {
		t.Fatalf("TrySet at the version before Curator's write: %v %v, want false", ok, err)
	}
	j.expect(t, ctx, "count-listen", "ok")
	if err := c.Set(ctx, 99); err != nil {
		t.Fatal(err)
	}
	// Curator's SharedCount may first report its own earlier write (-7),
	// whose watch event can reach it after the listener was added; then
	// it must report baton's 99.
	for l := j.line(t, ctx); l != "changed 99"; l = j.line(t, ctx) {
		if l != "changed -7" {
			t.Fatalf("Curator's listener after baton's Set: %q, want \"changed 99\"", l)
		}
	}
	j.expect(t, ctx, "quit", "bye")
}

// TestInteropAtomicLong: baton's AtomicLong and Curator's
// DistributedAtomicLong on one node (8-byte big-endian long) add to one
// value.
func TestInteropAtomicLong(t *testing.T) {
	p := counterPeer(t)
	ctx := interopCtx(t)
	s := openT(t, 10*time.Second)
	path := testPath(t)
	j := startCounter(t, p, path)
	a := baton.NewAtomicLong(s, path)
	if _, post, err := a.Add(ctx, 5000000000); err != nil || post != 5000000000 {
		t.Fatalf("Add: %d %v", post, err)
	}
	j.expect(t, ctx, "long-get", "5000000000")
	j.expect(t, ctx, "long-add -3", "4999999997")
	if v, err := a.Get(ctx); err != nil || v != 4999999997 {
		t.Fatalf("baton reads Curator's value: %d %v", v, err)
	}
	j.expect(t, ctx, "quit", "bye")
}
