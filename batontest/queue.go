package batontest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
)

// queueItems is the number of items each producer puts in the load tests:
// 1,000 in all across the 8 producers, scaled.
func queueItems(h Harness) int { return scaled(h, 125) }

// scaled is n shrunk by h.LoadScale, and by a fifth with -short; at least
// 4.
func scaled(h Harness, n int) int {
	f := float64(n)
	if h.LoadScale > 0 {
		f *= h.LoadScale
	}
	if testing.Short() {
		f /= 5
	}
	return max(int(f), 4)
}

// Put, Peek, Poll, Len and a blocking Take, in FIFO order.
func testQueueFIFO(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	q, other := baton.NewQueue(ss[0], name), baton.NewQueue(ss[1], name)
	if _, err := q.Poll(ctx); !errors.Is(err, baton.ErrEmpty) {
		t.Fatalf("Poll on an empty queue: %v, want ErrEmpty", err)
	}
	if _, err := q.Peek(ctx); !errors.Is(err, baton.ErrEmpty) {
		t.Fatalf("Peek on an empty queue: %v, want ErrEmpty", err)
	}
	for i := range 5 {
		if err := q.Put(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := other.Len(ctx); err != nil || n != 5 {
		t.Fatalf("Len %d, %v; want 5", n, err)
	}
	if v, err := other.Peek(ctx); err != nil || string(v) != "0" {
		t.Fatalf("Peek %q, %v; want 0", v, err)
	}
	for i := range 5 {
		got := other.Poll
		if i%2 == 1 {
			got = other.Take
		}
		v, err := got(ctx)
		if err != nil || string(v) != fmt.Sprint(i) {
			t.Fatalf("item %d: %q, %v", i, v, err)
		}
	}
	if n, _ := q.Len(ctx); n != 0 {
		t.Fatalf("Len %d after taking everything", n)
	}
	res := make(chan string, 1)
	go func() {
		v, err := other.Take(ctx)
		if err != nil {
			t.Errorf("Take: %v", err)
		}
		res <- string(v)
	}()
	if err := q.Put(ctx, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if v := <-res; v != "late" {
		t.Fatalf("blocked Take got %q, want late", v)
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := other.Take(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Take on an empty queue past its deadline: %v", err)
	}
}

// produce runs producers putting items "p-i" and returns when all are in.
// Each producer puts the first half of its items, then waits for pause to
// close.
func produce(ctx context.Context, t *testing.T, ss []*baton.Session, put func(s *baton.Session, data []byte) error, items int, pause <-chan struct{}) {
	var wg sync.WaitGroup
	for p, s := range ss {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := range items {
				if i == items/2 {
					select {
					case <-pause:
					case <-ctx.Done():
						return
					}
				}
				if err := put(s, fmt.Appendf(nil, "%d-%d", p, i)); err != nil {
					t.Errorf("producer %d: %v", p, err)
					return
				}
			}
		}(p)
	}
	wg.Wait()
}

// killMidway runs the producers and, once done() reports a quarter of the
// items through, expires the session of the consumer to kill while the
// second half is still to come.
func killMidway(ctx context.Context, t *testing.T, h Harness, producers []*baton.Session, victim *baton.Session,
	put func(s *baton.Session, data []byte) error, items int, done func() int64) {
	t.Helper()
	pause := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		produce(ctx, t, producers, put, items, pause)
	}()
	quarter := int64(len(producers) * items / 4)
	if !await.Within(timeout/2, func() bool { return done() >= quarter }) {
		close(pause)
		<-produced
		t.Fatalf("only %d of %d items through before the kill", done(), quarter)
	}
	h.Expire(t, victim)
	// The victim learns of its death before the rest comes, so that it is
	// still consuming (or waiting for items) when it does.
	select {
	case <-victim.Done():
	case <-time.After(20 * time.Second):
		t.Errorf("the killed consumer's session did not end")
	}
	close(pause)
	<-produced
}

// awaitVictim waits for the killed consumer to end by itself, before the
// test cancels the others: it must notice its session's death on its own
// (a Take that finds both its session gone and its ctx cancelled reports
// the cancel).
func awaitVictim(t *testing.T, ended <-chan struct{}) {
	t.Helper()
	select {
	case <-ended:
	case <-time.After(timeout / 2):
		t.Errorf("the killed consumer was still consuming %v after its session ended", timeout/2)
	}
}

// waitEmpty waits until the queue at name holds no item and reports
// whether it did.
func waitEmpty(t *testing.T, h Harness, name string) bool {
	t.Helper()
	s := h.Open(t, LoadTTL)
	q := baton.NewQueue(s, name)
	return await.Within(timeout/2, func() bool { n, err := q.Len(testCtx(t)); return err == nil && n == 0 })
}

// drainFailed reports what was left when a queue never drained.
func drainFailed(t *testing.T, h Harness, name string, errs []error, progress, stacks string) {
	t.Helper()
	left := len(children(t, h, name))
	claims := len(children(t, h, backend.Join(name, "claims")))
	t.Fatalf("queue never drained: %d children and %d claims left; consumers ended with %v\n%s\nwhere the consumers were when the wait ended:\n%s",
		left, claims, errs, progress, stacks)
}

// loadKillingOne is the run of the queue load tests on name: consumers
// goroutines each run consume(ctx, c), which returns the error its
// consumer ended with, while killMidway has the first producers sessions
// of ss put their items with put and expires the session of consumer 0
// (ss[producers]) midway. Once consumer 0 has ended by itself and the
// queue is empty, it cancels the others and returns every consumer's
// error.
func loadKillingOne(ctx context.Context, t *testing.T, h Harness, name string, ss []*baton.Session, producers, consumers, items int,
	put func(s *baton.Session, data []byte) error, done func() int64, consume func(ctx context.Context, c int) error) []error {
	t.Helper()
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make([]error, consumers)
	var wg sync.WaitGroup
	victimEnded := make(chan struct{})
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c == 0 {
				defer close(victimEnded)
			}
			errs[c] = consume(cctx, c)
		}()
	}
	killMidway(ctx, t, h, ss[:producers], ss[producers], put, items, done)
	awaitVictim(t, victimEnded)
	progress := watchDrain(done)
	drained := waitEmpty(t, h, name)
	seen := progress.end()
	var stacks string
	if !drained {
		stacks = consumerStacks(64 << 10) // before stop() unblocks them
	}
	stop()
	wg.Wait()
	if !drained {
		drainFailed(t, h, name, errs, seen, stacks)
	}
	return errs
}

// 8 producers × 8 consumers; consumer 0's session is expired midway. No
// item is delivered twice, and nothing is missing but, at most, the one
// item the dead consumer was taking when it died.
func testQueueLoad(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const producers, consumers = 8, 8
	items := queueItems(h)
	total := producers * items
	ss := sessions(t, h, producers+consumers)
	var delivered atomic.Int64
	got := make([][]string, consumers)
	put := func(s *baton.Session, data []byte) error { return baton.NewQueue(s, name).Put(ctx, data) }
	errs := loadKillingOne(ctx, t, h, name, ss, producers, consumers, items, put, delivered.Load, func(ctx context.Context, c int) error {
		q := baton.NewQueue(ss[producers+c], name)
		for {
			v, err := q.Take(ctx)
			if err != nil {
				return err
			}
			got[c] = append(got[c], string(v))
			delivered.Add(1)
		}
	})
	if !baton.IsSessionGone(errs[0]) {
		t.Fatalf("killed consumer ended with %v, want a session error", errs[0])
	}
	seen := map[string]int{}
	for c := range consumers {
		if c > 0 && !errors.Is(errs[c], context.Canceled) {
			t.Errorf("consumer %d ended with %v", c, errs[c])
		}
		for _, v := range got[c] {
			seen[v]++
			if seen[v] > 1 {
				t.Fatalf("item %s delivered twice", v)
			}
		}
	}
	if missing := total - len(seen); missing > 1 {
		var lost []string
		for p := range producers {
			for i := range items {
				if v := fmt.Sprintf("%d-%d", p, i); seen[v] == 0 {
					lost = append(lost, v)
				}
			}
		}
		t.Fatalf("%d of %d items missing: %v; consumers ended with %v", missing, total, lost, errs)
	}
}

// Reliable queue under the same load; consumer 0 holds an item it never
// acknowledges and its session is expired midway, while it is consuming.
// Every item is delivered and the queue ends empty (every item acknowledged
// by someone); only items consumer 0 had are delivered twice, and its
// unacknowledged item reaches another consumer.
func testReliableQueueLoad(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const producers, consumers = 8, 8
	items := queueItems(h)
	total := producers*items + 1
	ss := sessions(t, h, producers+consumers)
	q0 := baton.NewReliableQueue(ss[producers], name)
	if err := q0.Put(ctx, []byte("orphan")); err != nil {
		t.Fatal(err)
	}
	if it, err := q0.Take(ctx); err != nil || string(it.Data) != "orphan" {
		t.Fatalf("Take: %v", err)
	}
	var acks atomic.Int64
	got := make([][]string, consumers) // delivered, acknowledged or not
	put := func(s *baton.Session, data []byte) error { return baton.NewReliableQueue(s, name).Put(ctx, data) }
	errs := loadKillingOne(ctx, t, h, name, ss, producers, consumers, items, put, acks.Load, func(ctx context.Context, c int) error {
		q := baton.NewReliableQueue(ss[producers+c], name)
		for {
			it, err := q.Take(ctx)
			if err == nil {
				got[c] = append(got[c], string(it.Data))
				err = q.Ack(ctx, it)
			}
			if err != nil {
				return err
			}
			acks.Add(1)
		}
	})
	if !baton.IsSessionGone(errs[0]) && !errors.Is(errs[0], baton.ErrLost) {
		t.Fatalf("killed consumer ended with %v, want a session error", errs[0])
	}
	mine := map[string]bool{"orphan": true}
	for _, v := range got[0] {
		mine[v] = true
	}
	seen := map[string]int{}
	for c := range consumers {
		if c > 0 && !errors.Is(errs[c], context.Canceled) {
			t.Errorf("consumer %d ended with %v", c, errs[c])
		}
		for _, v := range got[c] {
			seen[v]++
			if seen[v] > 1 && !mine[v] {
				t.Fatalf("item %s delivered twice, never to the dead consumer", v)
			}
		}
	}
	if len(seen) != total {
		t.Fatalf("%d of %d items delivered", len(seen), total)
	}
	if seen["orphan"] != 1 {
		t.Fatal("the dead consumer's unacknowledged item was not redelivered")
	}
	if kids := children(t, h, backend.Join(name, "claims")); len(kids) != 0 {
		t.Fatalf("%d claims left behind", len(kids))
	}
}

// Reliable queue contract: a taken item stays until acked, is invisible to
// other consumers while claimed, comes back on Release, and an Ack after
// our session died is ErrLost.
func testReliableQueueClaims(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	a, b := baton.NewReliableQueue(ss[0], name), baton.NewReliableQueue(ss[1], name)
	for _, v := range []string{"x", "y"} {
		if err := a.Put(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	x, err := a.Take(ctx)
	if err != nil || string(x.Data) != "x" {
		t.Fatalf("Take: %v", err)
	}
	y, err := b.Poll(ctx)
	if err != nil || string(y.Data) != "y" {
		t.Fatalf("Poll past a claimed item: %q, %v; want y", y.Data, err)
	}
	if _, err := b.Poll(ctx); !errors.Is(err, baton.ErrEmpty) {
		t.Fatalf("Poll with every item claimed: %v, want ErrEmpty", err)
	}
	if n, _ := b.Len(ctx); n != 2 {
		t.Fatalf("Len %d with two claimed items, want 2", n)
	}
	if err := b.Release(ctx, y); err != nil {
		t.Fatal(err)
	}
	y2, err := b.Take(ctx)
	if err != nil || string(y2.Data) != "y" {
		t.Fatalf("Take after Release: %q, %v; want y", y2.Data, err)
	}
	if err := b.Ack(ctx, y2); err != nil {
		t.Fatal(err)
	}
	// a dies holding x: b gets it, and a's late Ack is refused.
	res := make(chan *baton.Item, 1)
	go func() {
		it, err := b.Take(ctx)
		if err != nil {
			t.Errorf("Take: %v", err)
		}
		res <- it
	}()
	h.Expire(t, ss[0])
	var x2 *baton.Item
	select {
	case x2 = <-res:
	case <-time.After(20 * time.Second):
		t.Fatal("the dead consumer's item never came back")
	}
	if x2 == nil || string(x2.Data) != "x" {
		t.Fatal("wrong item redelivered")
	}
	if err := a.Ack(ctx, x); err == nil {
		t.Fatal("Ack from a dead session succeeded")
	}
	if err := b.Ack(ctx, x2); err != nil {
		t.Fatal(err)
	}
	if n, _ := b.Len(ctx); n != 0 {
		t.Fatalf("Len %d after acking everything", n)
	}
}
