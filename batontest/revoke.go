package batontest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// revokable is one handle of a lock-like recipe, driven by the revocation
// tests.
type revokable struct {
	take    func(ctx context.Context) (*baton.Lease, error)
	release func(ctx context.Context) error
	dir     func(name string) string // where its nodes are
}

// testRevoked deletes the holder's node through another session (as an
// operator or another client would) and checks that the holder is told:
// its lease ends with an error wrapping both ErrLost and ErrRevoked, a
// contender then acquires, and the holder's release reports the loss.
func testRevoked(t *testing.T, h Harness, kind string, mk func(s *baton.Session, name string, holder bool) revokable) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	holder, next := mk(ss[0], name, true), mk(ss[1], name, false)
	l, err := holder.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := holder.dir(name)
	var node backend.Node
	for _, k := range children(t, h, dir) {
		if k.Kind == kind {
			node = k
		}
	}
	if node.Path == "" {
		t.Fatalf("no %s node under %s", kind, dir)
	}
	if err := ss[2].Conn().Delete(ctx, node); err != nil {
		t.Fatalf("delete the holder's node: %v", err)
	}
	select {
	case <-l.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the holder's lease is still live 20 s after its node was deleted")
	}
	if err := l.Err(); !errors.Is(err, baton.ErrLost) || !errors.Is(err, baton.ErrRevoked) {
		t.Fatalf("lease error %v, want ErrLost and ErrRevoked", err)
	}
	nl, err := next.take(ctx)
	if err != nil {
		t.Fatalf("contender after the revocation: %v", err)
	}
	if err := holder.release(ctx); !errors.Is(err, baton.ErrRevoked) {
		t.Fatalf("the revoked holder's release: %v, want ErrLost and ErrRevoked", err)
	}
	if nl.Err() != nil {
		t.Fatalf("the new holder's lease ended when the old one released: %v", nl.Err())
	}
	if err := next.release(ctx); err != nil {
		t.Fatal(err)
	}
}

func sameDir(name string) string { return name }

func testMutexRevoked(t *testing.T, h Harness) {
	testRevoked(t, h, backend.KindLock, func(s *baton.Session, name string, _ bool) revokable {
		m := baton.NewMutex(s, name)
		return revokable{take: m.Lock, release: m.Unlock, dir: sameDir}
	})
}

func testRWMutexRevoked(t *testing.T, h Harness) {
	testRevoked(t, h, backend.KindWrite, func(s *baton.Session, name string, _ bool) revokable {
		m := baton.NewRWMutex(s, name)
		return revokable{take: m.Lock, release: m.Unlock, dir: sameDir}
	})
}

func testRWMutexReaderRevoked(t *testing.T, h Harness) {
	testRevoked(t, h, backend.KindRead, func(s *baton.Session, name string, holder bool) revokable {
		m := baton.NewRWMutex(s, name)
		if holder {
			return revokable{take: m.RLock, release: m.RUnlock, dir: sameDir}
		}
		// The contender is a writer: it acquires only once the reader's
		// node is gone.
		return revokable{take: m.Lock, release: m.Unlock, dir: sameDir}
	})
}

func testSemaphoreRevoked(t *testing.T, h Harness) {
	testRevoked(t, h, backend.KindLease, func(s *baton.Session, name string, _ bool) revokable {
		m := baton.NewSemaphore(s, name, 1)
		var held *baton.Lease
		return revokable{
			take: func(ctx context.Context) (*baton.Lease, error) {
				l, err := m.Acquire(ctx)
				held = l
				return l, err
			},
			release: func(ctx context.Context) error { return m.Release(ctx, held) },
			dir:     func(name string) string { return backend.Join(name, "leases") },
		}
	})
}

func testElectionRevoked(t *testing.T, h Harness) {
	testRevoked(t, h, backend.KindLatch, func(s *baton.Session, name string, _ bool) revokable {
		e := baton.NewElection(s, name)
		return revokable{
			take: func(ctx context.Context) (*baton.Lease, error) {
				if err := e.Campaign(ctx, nil); err != nil {
					return nil, err
				}
				return e.Lease(), nil
			},
			release: e.Resign,
			dir:     sameDir,
		}
	})
}
