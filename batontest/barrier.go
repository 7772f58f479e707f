package batontest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
)

// Ten clients wait on a barrier, one of them dies while waiting: it gets a
// session error, and the others pass only once the barrier is removed.
func testBarrierWait(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t) + "/barrier"
	const clients = 10
	ss := sessions(t, h, clients+1)
	owner := baton.NewBarrier(ss[clients], name)
	if up, err := owner.IsSet(ctx); up || err != nil {
		t.Fatalf("IsSet before Set: %v, %v; want false, nil", up, err)
	}
	if err := owner.Set(ctx); err != nil {
		t.Fatal(err)
	}
	if up, err := baton.NewBarrier(ss[0], name).IsSet(ctx); !up || err != nil {
		t.Fatalf("IsSet after Set: %v, %v; want true, nil", up, err)
	}
	if err := owner.Set(ctx); err != nil {
		t.Fatalf("Set on a raised barrier: %v", err)
	}
	var removed atomic.Bool
	var early atomic.Int64
	res := make(chan error, clients)
	for i := range clients {
		go func(i int) {
			err := baton.NewBarrier(ss[i], name).Wait(ctx)
			if err == nil && !removed.Load() {
				early.Add(1)
			}
			res <- err
		}(i)
	}
	if h.PendingWatches != nil && !await.Within(10*time.Second, func() bool { return h.PendingWatches(t) >= clients }) {
		t.Fatalf("only %d of %d waiters watching", h.PendingWatches(t), clients)
	}
	h.Expire(t, ss[0])
	select {
	case err := <-res:
		if !baton.IsSessionGone(err) {
			t.Fatalf("first Wait to return: %v, want the dead client's session error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the dead client's Wait did not return")
	}
	removed.Store(true)
	if err := owner.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if up, err := owner.IsSet(ctx); up || err != nil {
		t.Fatalf("IsSet after Remove: %v, %v; want false, nil", up, err)
	}
	for range clients - 1 {
		if err := <-res; err != nil {
			t.Fatalf("Wait: %v", err)
		}
	}
	if n := early.Load(); n != 0 {
		t.Fatalf("%d waiters passed a raised barrier", n)
	}
	if err := owner.Remove(ctx); err != nil {
		t.Fatalf("Remove on a lowered barrier: %v", err)
	}
	if err := baton.NewBarrier(ss[1], name).Wait(ctx); err != nil {
		t.Fatalf("Wait on a lowered barrier: %v", err)
	}
}

// A cancelled Wait returns ctx's error and leaves the barrier up.
func testBarrierCancel(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t) + "/barrier"
	s := h.Open(t, LoadTTL)
	b := baton.NewBarrier(s, name)
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := b.Wait(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed-out Wait: %v, want DeadlineExceeded", err)
	}
	if _, _, err := s.Conn().Get(ctx, name); err != nil {
		t.Fatalf("barrier node after a cancelled Wait: %v", err)
	}
}

// Ten participants enter a double barrier together and leave together;
// one dies inside and does not hold up the others' Leave. The barrier can
// then be used again.
func testDoubleBarrier(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const n = 10
	ss := sessions(t, h, n)
	var entering, leaving atomic.Int64
	var dead atomic.Bool
	var mu sync.Mutex
	var faults []string
	fault := func(s string) {
		mu.Lock()
		faults = append(faults, s)
		mu.Unlock()
	}
	ds := make([]*baton.DoubleBarrier, n)
	entered := make(chan error, n)
	for i := range n {
		ds[i] = baton.NewDoubleBarrier(ss[i], name, n)
		go func(i int) {
			entering.Add(1)
			err := ds[i].Enter(ctx)
			if err == nil && entering.Load() != n {
				fault("Enter returned before all had entered")
			}
			entered <- err
		}(i)
	}
	for range n {
		if err := <-entered; err != nil {
			t.Fatalf("Enter: %v", err)
		}
	}
	// Participant 0 dies inside; the rest leave while it is still there.
	left := make(chan error, n-1)
	for i := 1; i < n; i++ {
		go func(i int) {
			leaving.Add(1)
			err := ds[i].Leave(ctx)
			if err == nil && (!dead.Load() || leaving.Load() != n-1) {
				fault("Leave returned while a participant was still inside")
			}
			left <- err
		}(i)
	}
	if !await.Within(10*time.Second, func() bool { return leaving.Load() == n-1 }) {
		t.Fatal("participants never started leaving")
	}
	select {
	case err := <-left:
		t.Fatalf("Leave returned (%v) with a participant inside", err)
	default:
	}
	dead.Store(true)
	h.Expire(t, ss[0])
	for range n - 1 {
		select {
		case err := <-left:
			if err != nil {
				t.Fatalf("Leave: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Leave held up by a dead participant")
		}
	}
	mu.Lock()
	if len(faults) > 0 {
		t.Fatal(faults)
	}
	mu.Unlock()
	if kids := children(t, h, name); len(kids) != 0 {
		t.Fatalf("%d nodes left behind (%s…)", len(kids), kids[0].Name)
	}

	// Second round, smaller, on the same name.
	const m = 3
	for i := 1; i <= m; i++ {
		ds[i] = baton.NewDoubleBarrier(ss[i], name, m)
	}
	var wg sync.WaitGroup
	for i := 1; i <= m; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := ds[i].Enter(ctx); err != nil {
				t.Errorf("round 2 Enter: %v", err)
				return
			}
			if err := ds[i].Leave(ctx); err != nil {
				t.Errorf("round 2 Leave: %v", err)
			}
		}(i)
	}
	wg.Wait()
}

// Enter is cancelled while too few have entered: our node goes; Leave
// without Enter is ErrNotHeld; a participant dying before the barrier opens
// returns a session error from Enter.
func testDoubleBarrierCancel(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	d := baton.NewDoubleBarrier(ss[0], name, 3)
	if err := d.Leave(ctx); !errors.Is(err, baton.ErrNotHeld) {
		t.Fatalf("Leave without Enter: %v, want ErrNotHeld", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := d.Enter(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Enter with too few: %v, want DeadlineExceeded", err)
	}
	if kids := children(t, h, name); len(kids) != 0 {
		t.Fatalf("%d nodes after a cancelled Enter", len(kids))
	}
	res := make(chan error, 1)
	go func() { res <- baton.NewDoubleBarrier(ss[1], name, 3).Enter(ctx) }()
	if !await.Within(10*time.Second, func() bool { return len(children(t, h, name)) == 1 }) {
		t.Fatal("never entered")
	}
	h.Expire(t, ss[1])
	select {
	case err := <-res:
		if !baton.IsSessionGone(err) {
			t.Fatalf("Enter on a dead session: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Enter still waiting on a dead session")
	}
}

// A double barrier for fewer than one participant is an error, not a
// panic or a wait forever.
func testDoubleBarrierNoParticipants(t *testing.T, h Harness) {
	ctx := testCtx(t)
	s := h.Open(t, LoadTTL)
	for _, n := range []int{0, -1} {
		if err := baton.NewDoubleBarrier(s, h.Path(t), n).Enter(ctx); !errors.Is(err, baton.ErrInvalidParticipants) {
			t.Errorf("%d participants: %v, want ErrInvalidParticipants", n, err)
		}
	}
}

// A participant entering with another number than the first one inside
// is refused (ErrParticipantsMismatch) and leaves no node behind; once
// all have left, the next round may use another number.
func testDoubleBarrierParticipantsMismatch(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	one := baton.NewDoubleBarrier(ss[0], name, 1)
	if err := one.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	if err := baton.NewDoubleBarrier(ss[1], name, 5).Enter(ctx); !errors.Is(err, baton.ErrParticipantsMismatch) {
		t.Fatalf("5 participants beside a 1-participant one: %v, want ErrParticipantsMismatch", err)
	}
	kids, err := ss[2].Conn().Children(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 2 { // the participant and "ready"
		t.Fatalf("%d nodes after the refusal, want the participant and ready: %v", len(kids), kids)
	}
	if err := one.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	// A new round with 2 participants.
	res := make(chan error, 2)
	ds := []*baton.DoubleBarrier{baton.NewDoubleBarrier(ss[1], name, 2), baton.NewDoubleBarrier(ss[2], name, 2)}
	for _, d := range ds {
		go func() { res <- d.Enter(ctx) }()
	}
	for range ds {
		if err := <-res; err != nil {
			t.Fatalf("a round of 2 after a round of 1: %v", err)
		}
	}
	for _, d := range ds {
		go func() { res <- d.Leave(ctx) }()
	}
	for range ds {
		if err := <-res; err != nil {
			t.Fatal(err)
		}
	}
}
