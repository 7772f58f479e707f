package zk

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/zktest"
)

// revokePeer compiles testdata/interop/RevokePeer.java against Debian's
// jars.
func revokePeer(t *testing.T) peer {
	return javaPeer(t, "RevokePeer", "Curator (javac, libcurator-recipes-java, libguava-java)",
		"curator-recipes.jar", "curator-framework.jar", "curator-client.jar",
		"zookeeper.jar", "zookeeper-jute.jar", "guava.jar", "slf4j-nop.jar")
}

// TestInteropRevocation: Curator's revocation protocol works both ways on
// one lock path. baton.Revoke (what `baton revoke` runs) asks Curator's
// revocable InterProcessMutex holder to let go: its RevocationListener
// runs, it releases, and baton then takes the lock. Curator's
// Revoker.attemptRevoke on a baton holder (a Revocable Mutex) closes the
// holder's RevokeRequested, and the lease stays held until its Unlock.
func TestInteropRevocation(t *testing.T) {
	p := revokePeer(t)
	ctx := interopCtx(t)
	s := openT(t, 10*time.Second)
	path := testPath(t)
	j := p.start(t, ctx, zktest.Shared(t).Addr(), path)
	if l := j.line(t, ctx); l != "ready" {
		t.Fatalf("java: %q, want ready", l)
	}

	j.expect(t, ctx, "lock", "locked")
	m := baton.NewMutex(s, path, baton.Revocable())
	if _, err := m.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock while Curator holds: %v, want ErrLocked", err)
	}
	if _, err := baton.Revoke(ctx, s, path); err != nil {
		t.Fatal(err)
	}
	if l := j.line(t, ctx); l != "revoke requested" {
		t.Fatalf("Curator's holder after baton.Revoke: %q, want its listener to run", l)
	}
	j.expect(t, ctx, "release", "released")
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}

	j.expect(t, ctx, "revoke", "ok")
	select {
	case <-l.RevokeRequested():
	case <-time.After(10 * time.Second):
		t.Fatal("Curator's Revoker did not reach our holder")
	}
	if l.Err() != nil {
		t.Fatalf("the request ended our lease: %v", l.Err())
	}
	if err := m.Unlock(context.WithoutCancel(ctx)); err != nil {
		t.Fatal(err)
	}
	j.expect(t, ctx, "revoke", "none")
	j.expect(t, ctx, "quit", "bye")
}
