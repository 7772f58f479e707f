package batontest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
)

// Campaign, Leader, Proclaim and Resign: candidates lead in the order they
// joined, and Leader reports the leader's latest value.
func testElectionBasic(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	es := make([]*baton.Election, 3)
	for i := range es {
		es[i] = baton.NewElection(ss[i], name)
	}
	if _, _, err := es[0].Leader(ctx); !errors.Is(err, baton.ErrNoLeader) {
		t.Fatalf("Leader of an empty election: %v, want ErrNoLeader", err)
	}
	if err := es[0].Campaign(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	won := make(chan int, 2)
	for i := 1; i < 3; i++ {
		go func(i int) {
			if err := es[i].Campaign(ctx, []byte{'a' + byte(i)}); err != nil {
				t.Errorf("candidate %d: %v", i, err)
				won <- -1
				return
			}
			won <- i
		}(i)
		want := i + 1
		if !await.Within(10*time.Second, func() bool { return len(children(t, h, name)) == want }) {
			t.Fatalf("candidate %d never joined", i)
		}
	}
	val, node, err := es[2].Leader(ctx)
	if err != nil || string(val) != "a" {
		t.Fatalf("Leader: %q, %v; want a", val, err)
	}
	if l := es[0].Lease(); l == nil || l.Key() != name {
		t.Fatalf("leader's lease key %v, want the election's name %s", l, name)
	}
	if own, ok := es[0].Node(); !ok || own.Path != node.Path {
		t.Fatalf("Leader node %s is not the leader's (%s)", node.Path, own.Path)
	}
	if err := es[0].Proclaim(ctx, []byte("a2")); err != nil {
		t.Fatal(err)
	}
	if val, _, _ := es[1].Leader(ctx); string(val) != "a2" {
		t.Fatalf("Leader after Proclaim: %q, want a2", val)
	}
	if err := es[1].Proclaim(ctx, []byte("x")); !errors.Is(err, baton.ErrNotHeld) {
		t.Fatalf("Proclaim by a non-leader: %v, want ErrNotHeld", err)
	}
	lease := es[0].Lease()
	if err := es[0].Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(lease.Err(), baton.ErrNotHeld) {
		t.Fatalf("lease after Resign: %v", lease.Err())
	}
	if got := <-won; got != 1 {
		t.Fatalf("after the first resigned candidate %d leads, want 1", got)
	}
	if val, _, _ := es[0].Leader(ctx); string(val) != "b" {
		t.Fatalf("Leader: %q, want b", val)
	}
	if err := es[0].Resign(ctx); !errors.Is(err, baton.ErrNotHeld) {
		t.Fatalf("Resign without leading: %v, want ErrNotHeld", err)
	}
	if err := es[1].Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-won; got != 2 {
		t.Fatalf("candidate %d leads, want 2", got)
	}
	if err := es[2].Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := es[0].Leader(ctx); !errors.Is(err, baton.ErrNoLeader) {
		t.Fatalf("Leader after everyone resigned: %v, want ErrNoLeader", err)
	}
}

// Observe reports the leader, each change, and "no leader".
func testElectionObserve(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	octx, stop := context.WithCancel(ctx)
	events := baton.NewElection(ss[2], name).Observe(octx)
	next := func(what string) baton.LeaderEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("%s: Observe channel closed", what)
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no event", what)
		}
		panic("unreachable")
	}
	if ev := next("start"); ev.HasLeader() {
		t.Fatalf("first event %+v, want no leader", ev)
	}
	a, b := baton.NewElection(ss[0], name), baton.NewElection(ss[1], name)
	if err := a.Campaign(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if ev := next("a leads"); string(ev.Value) != "a" {
		t.Fatalf("event %q, want a", ev.Value)
	}
	bwon := make(chan error, 1)
	go func() { bwon <- b.Campaign(ctx, []byte("b")) }()
	if !await.Within(10*time.Second, func() bool { return len(children(t, h, name)) == 2 }) {
		t.Fatal("b never joined")
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-bwon; err != nil {
		t.Fatal(err)
	}
	if ev := next("a's node gone"); ev.HasLeader() || ev.Err != nil {
		t.Fatalf("event %+v after the leader's node went, want no leader", ev)
	}
	if ev := next("b leads"); string(ev.Value) != "b" {
		t.Fatalf("event %q, want b", ev.Value)
	}
	if err := b.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := next("nobody leads"); ev.HasLeader() {
		t.Fatalf("event %+v, want no leader", ev)
	}
	stop()
	var end baton.LeaderEvent
	for closed := false; !closed; {
		select {
		case ev, ok := <-events:
			if ok {
				end = ev
			}
			closed = !ok
		case <-time.After(10 * time.Second):
			t.Fatal("Observe channel not closed after cancel")
		}
	}
	if !errors.Is(end.Err, context.Canceled) {
		t.Fatalf("last event %+v, want Err context.Canceled", end)
	}

	// Observing through a session that ends says so.
	o := h.Open(t, LoadTTL)
	events = baton.NewElection(o, name).Observe(ctx)
	if ev := next("observer's start"); ev.HasLeader() || ev.Err != nil {
		t.Fatalf("event %+v, want no leader", ev)
	}
	if err := o.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := next("observer's session closed"); !baton.IsSessionGone(ev.Err) {
		t.Fatalf("last event %+v, want Err saying the session is gone", ev)
	}
	if _, ok := <-events; ok {
		t.Fatal("Observe channel still open after its last event")
	}
}

// Lock-kind nodes (etcd's `etcdctl elect`, the concurrency package) count
// as candidates; lock-layout nodes on ZooKeeper are refused.
func testElectionForeignCandidate(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	foreign, err := ss[0].Conn().Create(ctx, name, backend.KindLock, []byte("etcdctl"), backend.Ephemeral|backend.Sequential)
	if err != nil {
		t.Fatal(err)
	}
	e := baton.NewElection(ss[1], name)
	if val, _, err := e.Leader(ctx); err != nil || string(val) != "etcdctl" {
		t.Fatalf("Leader with a lock-kind candidate: %q, %v", val, err)
	}
	won := make(chan error, 1)
	go func() { won <- e.Campaign(ctx, []byte("us")) }()
	if strings.Contains(foreign.Name, "-lock-") || strings.Contains(foreign.Name, "__lock__") {
		// A lock-layout candidate on ZooKeeper is Curator's LeaderSelector
		// or kazoo's Election, which ignore latch nodes and would lead
		// beside us: Campaign refuses, leaving nothing behind.
		if err := <-won; !errors.Is(err, baton.ErrIncompatible) {
			t.Fatalf("Campaign beside %s: %v, want ErrIncompatible", foreign.Name, err)
		}
		if kids := children(t, h, name); len(kids) != 1 {
			t.Fatalf("Campaign left %d nodes", len(kids))
		}
		return
	}
	if !await.Within(10*time.Second, func() bool { return len(children(t, h, name)) == 2 }) {
		t.Fatal("never joined")
	}
	select {
	case err := <-won:
		t.Fatalf("Campaign returned %v while a lock-kind candidate leads", err)
	default:
	}
	if err := ss[0].Conn().Delete(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	if err := <-won; err != nil {
		t.Fatal(err)
	}
}

// Cancelling a waiting Campaign returns ctx's error and leaves nothing.
func testElectionCancel(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	if err := baton.NewElection(ss[0], name).Campaign(ctx, nil); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	e := baton.NewElection(ss[1], name)
	go func() { res <- e.Campaign(wctx, nil) }()
	if !await.Within(10*time.Second, func() bool { return len(children(t, h, name)) == 2 }) {
		t.Fatal("never joined")
	}
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Campaign returned %v", err)
	}
	if !settles(func() bool { return len(children(t, h, name)) == 1 }) {
		t.Fatalf("%d nodes after cancel, want 1", len(children(t, h, name)))
	}
	if e.Lease() != nil {
		t.Fatal("a cancelled Campaign left a lease")
	}
}

// runLog records which Run's fn is running.
type runLog struct {
	mu      sync.Mutex
	running map[int]bool
	starts  []int
	overlap []string
	cancels map[int]error
}

func newRunLog() *runLog { return &runLog{running: map[int]bool{}, cancels: map[int]error{}} }

// fn returns the leader function of candidate i: it runs until its ctx
// ends.
func (r *runLog) fn(i int) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		r.mu.Lock()
		for j := range r.running {
			r.overlap = append(r.overlap, fmt.Sprintf("%d started while %d ran", i, j))
		}
		r.running[i] = true
		r.starts = append(r.starts, i)
		r.mu.Unlock()
		<-ctx.Done()
		r.mu.Lock()
		delete(r.running, i)
		r.cancels[i] = context.Cause(ctx)
		r.mu.Unlock()
		return ctx.Err()
	}
}

func (r *runLog) startCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.starts)
}

func (r *runLog) lastStart() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts[len(r.starts)-1]
}

// runCandidates starts Run on each session and returns the log and the
// channel of Run results (candidate index, error).
func runCandidates(ctx context.Context, t *testing.T, h Harness, name string, ss []*baton.Session) (*runLog, chan [2]any) {
	log := newRunLog()
	res := make(chan [2]any, len(ss))
	for i, s := range ss {
		go func(i int) {
			err := baton.NewElection(s, name).Run(ctx, []byte(fmt.Sprint(i)), log.fn(i))
			res <- [2]any{i, err}
		}(i)
	}
	if !await.Within(10*time.Second, func() bool { return log.startCount() == 1 }) {
		t.Fatal("nobody ever led")
	}
	if !await.Within(10*time.Second, func() bool { return len(children(t, h, name)) == len(ss) }) {
		t.Fatal("not every candidate joined")
	}
	return log, res
}

// Fault: the server expires the leader's session. Its fn's ctx is
// cancelled (cause ErrLost), its Run returns a session error, and exactly
// one other candidate takes over.
func testElectionRunExpiry(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 3)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	log, res := runCandidates(rctx, t, h, name, ss)
	old := log.lastStart()
	h.Expire(t, ss[old])
	if !await.Within(20*time.Second, func() bool { return log.startCount() == 2 }) {
		t.Fatal("no new leader after the leader's session expired")
	}
	select {
	case r := <-res:
		if r[0] != old || !baton.IsSessionGone(r[1].(error)) {
			t.Fatalf("Run %v returned %v; want the old leader's Run to return a session error", r[0], r[1])
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the old leader's Run did not return")
	}
	log.mu.Lock()
	cause := log.cancels[old]
	newLeader := log.starts[1]
	log.mu.Unlock()
	if !errors.Is(cause, baton.ErrLost) {
		t.Fatalf("old leader's fn ctx cause %v, want ErrLost", cause)
	}
	if newLeader == old {
		t.Fatal("the expired leader led again")
	}
	// Exactly one new leader: the store names it, and the third candidate
	// is still waiting.
	val, _, err := baton.NewElection(ss[newLeader], name).Leader(ctx)
	if err != nil || string(val) != fmt.Sprint(newLeader) {
		t.Fatalf("Leader %q, %v; want %d", val, err, newLeader)
	}
	if n := log.startCount(); n != 2 {
		t.Fatalf("%d leaderships, want 2", n)
	}
	stop()
	for range 2 {
		if r := <-res; !errors.Is(r[1].(error), context.Canceled) {
			t.Fatalf("Run %v after cancel: %v", r[0], r[1])
		}
	}
}

// Fault: the leader is cut off the store. Its fn's ctx is cancelled before
// any other candidate's fn starts.
func testElectionRunPartition(t *testing.T, h Harness) {
	if h.Partition == nil {
		t.Fatalf("%s: harness has no Partition", h.Name)
	}
	ctx := testCtx(t)
	name := h.Path(t)
	ss := shortSessions(t, h, 3)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	log, res := runCandidates(rctx, t, h, name, ss)
	old := log.lastStart()
	heal := h.Partition(t, ss[old])
	defer heal()
	if !await.Within(20*time.Second, func() bool { return log.startCount() == 2 }) {
		t.Fatal("no new leader after the leader was cut off")
	}
	log.mu.Lock()
	overlap := log.overlap
	cause := log.cancels[old]
	log.mu.Unlock()
	if len(overlap) > 0 {
		t.Fatalf("two leaders ran at once: %v", overlap)
	}
	if !errors.Is(cause, baton.ErrLost) {
		t.Fatalf("old leader's fn ctx cause %v, want ErrLost", cause)
	}
	stop()
	for range 3 {
		select {
		case <-res:
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	}
}

// Fault: the leader's node is deleted under it (an operator, a foreign
// tool). Its fn's ctx is cancelled, the next candidate leads, and the old
// leader's Run campaigns again on its live session.
func testElectionNodeDeleted(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	log, res := runCandidates(rctx, t, h, name, ss)
	old := log.lastStart()
	_, node, err := baton.NewElection(ss[1-old], name).Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ss[1-old].Conn().Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	if !await.Within(20*time.Second, func() bool { return log.startCount() == 2 }) {
		t.Fatal("no new leader after the leader's node was deleted")
	}
	if log.lastStart() != 1-old {
		t.Fatal("the deposed leader led again before the other candidate")
	}
	// The deposed leader rejoined the line behind the new one.
	if !await.Within(10*time.Second, func() bool { return len(children(t, h, name)) == 2 }) {
		t.Fatal("the deposed leader did not campaign again")
	}
	log.mu.Lock()
	cause := log.cancels[old]
	log.mu.Unlock()
	if !errors.Is(cause, baton.ErrLost) {
		t.Fatalf("deposed leader's fn ctx cause %v, want ErrLost", cause)
	}
	stop()
	for range 2 {
		<-res
	}
}
