package batontest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/batonhq/baton"
)

// A Queue's Take and Poll never take an item that a ReliableQueue
// consumer on the same name has claimed (`baton queue take` claims an
// item until it has written it): they skip it, find the queue empty when
// every item is claimed, and take it once the claim is released.
func testQueueHonoursClaims(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	q, rq := baton.NewQueue(ss[0], name), baton.NewReliableQueue(ss[1], name)
	for _, v := range []string{"x", "y"} {
		if err := q.Put(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	x, err := rq.Take(ctx)
	if err != nil || string(x.Data) != "x" {
		t.Fatalf("claim: %v", err)
	}
	if v, err := q.Poll(ctx); err != nil || string(v) != "y" {
		t.Fatalf("Poll past a claimed item: %q, %v; want y", v, err)
	}
	if v, err := q.Poll(ctx); !errors.Is(err, baton.ErrEmpty) {
		t.Fatalf("Poll with the one item claimed: %q, %v; want ErrEmpty", v, err)
	}
	got := make(chan string, 1)
	go func() {
		v, err := q.Take(ctx)
		if err != nil {
			t.Errorf("Take: %v", err)
		}
		got <- string(v)
	}()
	if err := rq.Release(ctx, x); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "x" {
		t.Fatalf("Take after the claim's release: %q, want x", v)
	}
	if n, err := q.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len %d, %v after taking everything", n, err)
	}
}

// Queue takers and ReliableQueue claimers at once on one name: every item
// is delivered exactly once.
func testQueueMixedConsumers(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	const consumers = 4
	total := scaled(h, 100)
	ss := sessions(t, h, consumers+1)
	for i := range total {
		if err := baton.NewQueue(ss[consumers], name).Put(ctx, fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q, rq := baton.NewQueue(ss[c], name), baton.NewReliableQueue(ss[c], name)
			for {
				var v []byte
				var err error
				if c%2 == 0 {
					v, err = q.Poll(ctx)
				} else {
					var it *baton.Item
					if it, err = rq.Poll(ctx); err == nil {
						v = it.Data
						err = rq.Ack(ctx, it)
					}
				}
				if errors.Is(err, baton.ErrEmpty) {
					return
				}
				if err != nil {
					t.Errorf("consumer %d: %v", c, err)
					return
				}
				mu.Lock()
				seen[string(v)]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i := range total {
		if n := seen[fmt.Sprint(i)]; n != 1 {
			t.Errorf("item %d delivered %d times", i, n)
		}
	}
	if t.Failed() {
		t.Fatalf("%d distinct items delivered of %d", len(seen), total)
	}
}

// priorityTaker is PriorityQueue's Take and Poll, for the cancel tests.
var priorityTaker = taker{
	put: func(ctx context.Context, s *baton.Session, name string, data []byte) error {
		return baton.NewPriorityQueue(s, name).Put(ctx, data, 1)
	},
	take: func(ctx context.Context, s *baton.Session, name string, poll bool) ([]byte, error) {
		q := baton.NewPriorityQueue(s, name)
		if poll {
			return q.Poll(ctx)
		}
		return q.Take(ctx)
	},
	length: func(ctx context.Context, s *baton.Session, name string) (int, error) {
		return baton.NewPriorityQueue(s, name).Len(ctx)
	},
}

func testPriorityQueueCancelAfterSend(t *testing.T, h Harness) { cancelAfterSend(t, h, priorityTaker) }
