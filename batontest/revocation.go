package batontest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// Revocation (Curator's protocol): Revoke writes the marker into the
// holder's node; a Revocable holder's lease signals RevokeRequested while
// it still holds (nobody else acquires until it lets go); after its
// Unlock the next contender holds, and its own lease is not revoked.
func testRevocationAsked(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	holder := baton.NewMutex(ss[0], name, baton.Revocable())
	l, err := holder.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := baton.NewMutex(ss[2], name, baton.Revocable())
	got := make(chan *baton.Lease, 1)
	go func() {
		l2, err := next.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- l2
	}()
	if !settles(func() bool { return lockNodes(t, h, name) == 2 }) {
		t.Fatal("the contender never queued")
	}
	n, err := baton.Revoke(ctx, ss[1], name)
	if err != nil {
		t.Fatal(err)
	}
	if n.Token != l.Token() {
		t.Fatalf("Revoke wrote into node %s (token %d), not the holder's (token %d)", n.Path, n.Token, l.Token())
	}
	select {
	case <-l.RevokeRequested():
	case <-time.After(10 * time.Second):
		t.Fatal("the holder was not told of the revocation request")
	}
	if l.Err() != nil {
		t.Fatalf("a revocation request ended the lease: %v", l.Err())
	}
	select {
	case <-got:
		t.Fatal("the contender acquired while the revoked holder still held")
	case <-time.After(notReturning):
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	var l2 *baton.Lease
	select {
	case l2 = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the contender did not acquire after the revoked holder let go")
	}
	if l2 == nil {
		return
	}
	select {
	case <-l2.RevokeRequested():
		t.Fatal("the next holder's lease is revoked too")
	case <-time.After(notReturning):
	}
	if err := next.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := baton.Revoke(ctx, ss[1], name); !errors.Is(err, baton.ErrNotHeld) {
		t.Fatalf("Revoke with nobody holding: %v, want ErrNotHeld", err)
	}
}

// A holder that did not ask for revocation is not told, and keeps its
// lease; a revocable holder told while waiting in line is told once it
// holds.
func testRevocationNotRevocable(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	plain := baton.NewMutex(ss[0], name)
	l, err := plain.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A revocable contender queues; the request is written into its
	// node while it waits (as Curator's Revoker can, given its path).
	waiter := baton.NewMutex(ss[2], name, baton.Revocable())
	got := make(chan *baton.Lease, 1)
	go func() {
		l2, err := waiter.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- l2
	}()
	if !settles(func() bool { return lockNodes(t, h, name) == 2 }) {
		t.Fatal("the contender never queued")
	}
	if _, err := baton.Revoke(ctx, ss[1], name); err != nil {
		t.Fatal(err)
	}
	var locks []backend.Node // in line order: the holder's, the waiter's
	for _, k := range children(t, h, name) {
		if k.Kind == backend.KindLock {
			locks = append(locks, k)
		}
	}
	if len(locks) != 2 {
		t.Fatalf("%d lock nodes, want the holder's and the waiter's", len(locks))
	}
	wn := locks[1]
	if _, n, err := ss[1].Conn().Get(ctx, wn.Path); err != nil {
		t.Fatal(err)
	} else if err := ss[1].Conn().Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpSet, Node: n, Data: baton.RevokeMarker}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.RevokeRequested():
		t.Fatal("a holder that is not revocable was told")
	case <-time.After(notReturning):
	}
	if l.Err() != nil {
		t.Fatalf("the revocation request ended a lease: %v", l.Err())
	}
	if err := plain.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l2 := <-got
	if l2 == nil {
		return
	}
	select {
	case <-l2.RevokeRequested():
	case <-time.After(10 * time.Second):
		t.Fatal("a request written while the contender waited was not seen once it held")
	}
	if err := waiter.Unlock(context.WithoutCancel(ctx)); err != nil {
		t.Fatal(err)
	}
}
