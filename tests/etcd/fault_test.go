package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/proxy"
)

// faultTTL is the session TTL of the fault tests.
const faultTTL = 2 * time.Second

// restartTTL is the session TTL of the restart test.
const restartTTL = 5 * time.Second

// A holder cut off from the store (its connections closed, new ones
// refused) learns it lost the lock before the waiter behind it gets it.
func TestFaultCutHolderLearnsFirst(t *testing.T) {
	ctx := testCtx(t)
	name := "/faults/cut"
	p := proxy.Start(t, server(t).Addr())
	a := openT(t, []string{"http://" + p.Addr()}, etcd.WithTTL(faultTTL))
	b := openT(t, server(t).Endpoints(), etcd.WithTTL(faultTTL))
	la, err := baton.NewMutex(a, name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		at         time.Time
		holderDone bool
		err        error
	}
	got := make(chan result, 1)
	go func() {
		_, err := baton.NewMutex(b, name).Lock(ctx)
		r := result{at: time.Now(), err: err}
		select {
		case <-la.Done():
			r.holderDone = true
		default:
		}
		got <- r
	}()
	if !await.Within(10*time.Second, func() bool { return kindCount(t, b, name, backend.KindLock) == 2 }) {
		t.Fatal("waiter never queued")
	}
	cut := time.Now()
	p.Cut()
	var lost time.Time
	select {
	case <-la.Done():
		lost = time.Now()
	case r := <-got:
		t.Fatalf("waiter acquired (%v) before the cut holder learned of its loss", r.err)
	case <-time.After(4 * faultTTL):
		t.Fatal("cut holder never learned of its loss")
	}
	if !errors.Is(la.Err(), baton.ErrLost) || !errors.Is(a.Err(), baton.ErrSessionLost) {
		t.Fatalf("lease error %v, session error %v; want ErrLost, ErrSessionLost", la.Err(), a.Err())
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.holderDone || !lost.Before(r.at) {
		t.Fatal("waiter acquired before the holder's lease ended")
	}
	t.Logf("cut at 0; holder lost at %v; waiter acquired at %v", lost.Sub(cut).Round(time.Millisecond), r.at.Sub(cut).Round(time.Millisecond))
}

// A server restart on the same data dir: sessions resume (or are reported
// lost), the lock stays exclusive, and nothing hangs.
func TestFaultServerRestart(t *testing.T) {
	ctx := testCtx(t)
	srv := etcdtest.Start(t)
	name := "/faults/restart"
	// A TTL longer than the restart lets the sessions resume.
	a := openT(t, srv.Endpoints(), etcd.WithTTL(restartTTL))
	b := openT(t, srv.Endpoints(), etcd.WithTTL(restartTTL))
	ma := baton.NewMutex(a, name)
	la, err := ma.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var lb *baton.Lease
	go func() {
		var err error
		lb, err = baton.NewMutex(b, name).Lock(ctx)
		got <- err
	}()
	if !await.Within(10*time.Second, func() bool { return kindCount(t, a, name, backend.KindLock) == 2 }) {
		t.Fatal("waiter never queued")
	}
	start := time.Now()
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted in %v", time.Since(start).Round(time.Millisecond))
	// The holder either kept its session (and the lock) or was told it
	// lost it; the waiter is still waiting unless the holder's lease ended.
	select {
	case err := <-got:
		if la.Err() == nil {
			t.Fatalf("waiter returned (%v) while the holder still holds", err)
		}
		got <- err
	default:
	}
	if la.Err() == nil {
		if err := ma.Unlock(ctx); err != nil {
			t.Fatalf("holder's Unlock after the restart: %v", err)
		}
		t.Log("holder's session survived the restart")
	} else {
		t.Logf("holder's session ended across the restart: %v", a.Err())
	}
	select {
	case err := <-got:
		switch {
		case err == nil:
			if lb.Token() <= la.Token() {
				t.Fatalf("token %d after %d", lb.Token(), la.Token())
			}
		case baton.IsSessionGone(err):
			t.Logf("waiter's session ended across the restart: %v", err)
		default:
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(3 * restartTTL):
		t.Fatal("waiter hangs after the restart")
	}
	// The store is usable again by a new session.
	c := openT(t, srv.Endpoints(), etcd.WithTTL(faultTTL))
	if _, err := baton.NewMutex(c, name+"-after").Lock(ctx); err != nil {
		t.Fatalf("lock after restart: %v", err)
	}
}

// Unlock is fenced by revision: after a loss and a new acquisition on the
// same session (the same key name), the stale node's Delete leaves the new
// key alone (etcd #22082).
func TestFencedDeleteSparesNewerIncarnation(t *testing.T) {
	ctx := testCtx(t)
	s := openT(t, server(t).Endpoints())
	c := s.Conn()
	old, err := c.Create(ctx, "/faults/fenced", backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	// We release and queue again: the same key name, a newer revision.
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	cur, err := c.Create(ctx, "/faults/fenced", backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Path != old.Path || cur.Token <= old.Token {
		t.Fatalf("new node %+v, old %+v: want the same key, newer revision", cur, old)
	}
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, n, err := c.Get(ctx, cur.Path); err != nil || n.Token != cur.Token {
		t.Fatalf("the stale Delete removed the newer key: %+v, %v", n, err)
	}
	// A waiter on the old incarnation returns at once although the key
	// exists again (ABA).
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.WaitGone(wctx, old); err != nil {
		t.Fatalf("WaitGone on a gone incarnation: %v", err)
	}
}

// A server down for longer than the TTL: holder and waiter are told their
// sessions are lost (the waiter's Lock returns), and once the server is
// back a new session gets the lock after the old lease runs out.
func TestFaultServerDownPastTTL(t *testing.T) {
	ctx := testCtx(t)
	srv := etcdtest.Start(t)
	name := "/faults/down"
	a := openT(t, srv.Endpoints(), etcd.WithTTL(faultTTL))
	b := openT(t, srv.Endpoints(), etcd.WithTTL(faultTTL))
	la, err := baton.NewMutex(a, name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { _, err := baton.NewMutex(b, name).Lock(ctx); got <- err }()
	if !await.Within(10*time.Second, func() bool { return kindCount(t, a, name, backend.KindLock) == 2 }) {
		t.Fatal("waiter never queued")
	}
	srv.Stop()
	select {
	case <-la.Done():
	case <-time.After(3 * faultTTL):
		t.Fatal("holder not told of its loss while the server is down")
	}
	select {
	case err := <-got:
		if !baton.IsSessionGone(err) {
			t.Fatalf("waiter: %v, want a session error", err)
		}
	case <-time.After(3 * faultTTL):
		t.Fatal("waiter hangs while the server is down")
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	c := openT(t, srv.Endpoints(), etcd.WithTTL(faultTTL))
	lctx, cancel := context.WithTimeout(ctx, 5*faultTTL)
	defer cancel()
	lc, err := baton.NewMutex(c, name).Lock(lctx)
	if err != nil {
		t.Fatalf("lock after the restart: %v", err)
	}
	if lc.Token() <= la.Token() {
		t.Fatalf("token %d after %d", lc.Token(), la.Token())
	}
}
