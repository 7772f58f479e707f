package batontest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
)

// Three selectors Run with requeue: leaderships never overlap, tokens
// increase, every candidate leads again after its turn (requeue), and
// each Run returns ctx's error once stopped, leaving no node.
func testSelectorRequeue(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const candidates, turns = 3, 3 // each leads at least turns times
	ss := sessions(t, h, candidates)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var chk Checker
	var mu sync.Mutex
	led := make([]int, candidates)
	enough := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range led {
			if n < turns {
				return false
			}
		}
		return true
	}
	res := make(chan error, candidates)
	for i, s := range ss {
		sel := baton.NewLeaderSelector(s, name, []byte(fmt.Sprint(i)))
		go func() {
			res <- sel.Run(rctx, func(ctx context.Context, l *baton.Lease) error {
				if !sel.Leading() {
					t.Errorf("candidate %d: fn runs but Leading is false", i)
				}
				sp := chk.Enter(i, l.Token())
				Hold(l)
				chk.Leave(sp)
				mu.Lock()
				led[i]++
				mu.Unlock()
				return nil
			})
		}()
	}
	if !await.Within(60*time.Second, enough) {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("turns led %v: not every candidate led %d times", led, turns)
	}
	stop()
	for range candidates {
		select {
		case err := <-res:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run returned %v, want context.Canceled", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return after ctx ended")
		}
	}
	if err := chk.Verify(true); err != nil {
		t.Fatal(err)
	}
	if !settles(func() bool { return len(children(t, h, name)) == 0 }) {
		t.Fatalf("%d nodes left after Run returned", len(children(t, h, name)))
	}
}

// The leader's node is deleted by someone else: its fn's ctx is cancelled
// with ErrLost as the cause, and Run campaigns again and leads again with
// a greater token.
func testSelectorLossRequeues(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	s := sessions(t, h, 1)[0]
	sel := baton.NewLeaderSelector(s, name, []byte("me"))
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	leases := make(chan *baton.Lease, 2)
	causes := make(chan error, 2)
	res := make(chan error, 1)
	go func() {
		res <- sel.Run(rctx, func(ctx context.Context, l *baton.Lease) error {
			leases <- l
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		})
	}()
	first := <-leases
	id, node, err := sel.Leader(ctx)
	if err != nil || string(id) != "me" {
		t.Fatalf("Leader: %q %v, want our id", id, err)
	}
	if err := s.Conn().Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-causes:
		if !errors.Is(cause, baton.ErrLost) {
			t.Fatalf("fn ctx cause %v, want ErrLost", cause)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("fn ctx not cancelled after our node was deleted")
	}
	select {
	case second := <-leases:
		if second.Token() <= first.Token() {
			t.Fatalf("token went from %d to %d", first.Token(), second.Token())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("did not lead again after the loss (no requeue)")
	}
	stop()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
}

// Observe on a selector reports the leader's id, then "no leader" once its
// single turn (Lead) is over; the session's expiry ends a Run with a
// session error and cancels fn's ctx.
func testSelectorObserveAndExpiry(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	obs := baton.NewLeaderSelector(ss[1], name, nil)
	octx, ostop := context.WithCancel(ctx)
	defer ostop()
	events := obs.Observe(octx)
	next := func() baton.LeaderEvent {
		select {
		case ev := <-events:
			return ev
		case <-time.After(20 * time.Second):
			t.Fatal("no event from Observe")
		}
		return baton.LeaderEvent{}
	}
	for ev := next(); ev.HasLeader(); ev = next() {
		t.Fatalf("a leader before anyone ran: %+v", ev)
	}
	sel := baton.NewLeaderSelector(ss[0], name, []byte("one-turn"))
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- sel.Lead(ctx, func(context.Context, *baton.Lease) error { <-release; return nil })
	}()
	ev := next()
	if !ev.HasLeader() || string(ev.Value) != "one-turn" {
		t.Fatalf("event %+v, want the leader's id", ev)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Lead: %v", err)
	}
	if ev := next(); ev.HasLeader() {
		t.Fatalf("event %+v after the turn, want no leader", ev)
	}
	if _, _, err := obs.Leader(ctx); !errors.Is(err, baton.ErrNoLeader) {
		t.Fatalf("Leader after the turn: %v, want ErrNoLeader", err)
	}

	// Expiry while leading in Run, once fn runs: Leading reports the lock
	// held a moment before Run calls fn, and a session that expires in
	// that moment ends Run without calling it, as it must.
	cause := make(chan error, 1)
	running := make(chan struct{}, 1)
	res := make(chan error, 1)
	go func() {
		res <- sel.Run(ctx, func(ctx context.Context, _ *baton.Lease) error {
			select {
			case running <- struct{}{}:
			default:
			}
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil
		})
	}()
	select {
	case <-running:
	case err := <-res:
		t.Fatalf("Run returned %v before leading", err)
	case <-time.After(10 * time.Second):
		t.Fatal("never led")
	}
	if !sel.Leading() {
		t.Fatal("fn runs, and Leading says false")
	}
	h.Expire(t, ss[0])
	select {
	case err := <-res:
		if !baton.IsSessionGone(err) {
			t.Fatalf("Run after expiry: %v, want a session error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the session expired")
	}
	select {
	case c := <-cause:
		if !errors.Is(c, baton.ErrLost) {
			t.Fatalf("fn ctx cause %v, want ErrLost", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run returned, and fn's ctx was not cancelled")
	}
}
