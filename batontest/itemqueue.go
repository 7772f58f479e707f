package batontest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// Items come out by priority, then in the order put; Poll and Take and
// PollClaim agree; Len counts them; a Take on an empty queue waits for a
// Put and a cancelled one takes nothing. On a store with a bounded range
// of priorities (Harness.MaxPriority) the same items take priorities in
// it, in the same order, and a priority outside is refused with
// ErrInvalidPriority, putting nothing.
func testPriorityOrder(t *testing.T, h Harness) {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	p, c := baton.NewPriorityQueue(ss[0], name), baton.NewPriorityQueue(ss[1], name)
	if _, err := c.Poll(ctx); !errors.Is(err, baton.ErrEmpty) {
		t.Fatalf("Poll on an empty queue: %v, want ErrEmpty", err)
	}
	puts := []struct {
		v string
		p int32
	}{{"five-a", 5}, {"minus-a", -3}, {"five-b", 5}, {"zero", 0}, {"big", 1 << 30}, {"minus-b", -3}, {"min", -1 << 31}}
	if top := h.MaxPriority; top != 0 {
		for _, bad := range []int32{-1, top + 1, -1 << 31} {
			if err := p.Put(ctx, []byte("refused"), bad); !errors.Is(err, baton.ErrInvalidPriority) {
				t.Fatalf("Put with priority %d outside 0..%d: %v, want ErrInvalidPriority", bad, top, err)
			}
		}
		in := map[int32]int32{5: 5, -3: 1, 0: 2, 1 << 30: top, -1 << 31: 0}
		for i := range puts {
			puts[i].p = in[puts[i].p]
		}
	}
	for _, x := range puts {
		if err := p.Put(ctx, []byte(x.v), x.p); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.Len(ctx); err != nil || n != len(puts) {
		t.Fatalf("Len %d %v, want %d", n, err, len(puts))
	}
	var got []string
	for i := range puts {
		var v []byte
		var err error
		switch i % 3 {
		case 0:
			v, err = c.Poll(ctx)
		case 1:
			v, err = c.Take(ctx)
		default:
			var it *baton.Item
			if it, err = c.PollClaim(ctx); err == nil {
				v = it.Data
				err = c.Ack(ctx, it)
			}
		}
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
		got = append(got, string(v))
	}
	if want := "min,minus-a,minus-b,zero,five-a,five-b,big"; strings.Join(got, ",") != want {
		t.Fatalf("order %v, want %s", got, want)
	}
	cctx, cancel := context.WithTimeout(ctx, notReturning)
	defer cancel()
	if _, err := c.Take(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Take on an empty queue: %v, want DeadlineExceeded", err)
	}
	res := make(chan string, 1)
	go func() {
		v, err := c.Take(ctx)
		if err != nil {
			t.Errorf("Take: %v", err)
		}
		res <- string(v)
	}()
	if err := p.Put(ctx, []byte("late"), 7); err != nil {
		t.Fatal(err)
	}
	if v := <-res; v != "late" {
		t.Fatalf("waiting Take got %q", v)
	}
	// Nothing left, and no claim (NAME.claims).
	if kids := children(t, h, name); len(kids) != 0 {
		t.Fatalf("nodes left: %+v", kids)
	}
	if kids := children(t, h, name+".claims"); len(kids) != 0 {
		t.Fatalf("claims left: %+v", kids)
	}
}

// Producers and consumers at once, half taking and half claiming: every
// item is delivered exactly once, and an item claimed by a consumer whose
// session expires is delivered to another.
func testItemQueueExactlyOnce(t *testing.T, h Harness) {
	for _, kind := range []string{"priority", "delay"} {
		t.Run(kind, func(t *testing.T) {
			ctx := testCtx(t)
			name := h.Path(t)
			const producers, consumers = 3, 4
			per := scaled(h, 20)
			ss := sessions(t, h, producers+consumers+1)
			type queue struct {
				put   func(ctx context.Context, v []byte, i int) error
				take  func(ctx context.Context) ([]byte, error)
				claim func(ctx context.Context) (*baton.Item, error)
				ack   func(ctx context.Context, it *baton.Item) error
			}
			open := func(s *baton.Session) queue {
				if kind == "priority" {
					q := baton.NewPriorityQueue(s, name)
					return queue{func(ctx context.Context, v []byte, i int) error { return q.Put(ctx, v, int32(i%5)) }, q.Take, q.Claim, q.Ack}
				}
				q := baton.NewDelayQueue(s, name)
				return queue{func(ctx context.Context, v []byte, i int) error {
					return q.Put(ctx, v, time.Duration(i%3)*5*time.Millisecond)
				}, q.Take, q.Claim, q.Ack}
			}
			// A claim whose consumer's session expires goes back.
			doomed := open(ss[producers+consumers])
			if err := doomed.put(ctx, []byte("doomed"), 0); err != nil {
				t.Fatal(err)
			}
			if it, err := doomed.claim(ctx); err != nil || string(it.Data) != "doomed" {
				t.Fatalf("claim: %v", err)
			}
			h.Expire(t, ss[producers+consumers])

			var mu sync.Mutex
			seen := map[string]int{}
			total := producers*per + 1
			done := make(chan struct{})
			var wg sync.WaitGroup
			for i := range consumers {
				q := open(ss[producers+i])
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						var v []byte
						var err error
						if i%2 == 0 {
							v, err = q.take(ctx)
						} else {
							var it *baton.Item
							if it, err = q.claim(ctx); err == nil {
								v = it.Data
								err = q.ack(ctx, it)
							}
						}
						if err != nil {
							select {
							case <-done:
							default:
								t.Errorf("consumer %d: %v", i, err)
							}
							return
						}
						mu.Lock()
						seen[string(v)]++
						n := len(seen)
						mu.Unlock()
						if n == total {
							close(done)
						}
					}
				}()
			}
			for i := range producers {
				q := open(ss[i])
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range per {
						if err := q.put(ctx, []byte(fmt.Sprintf("%d-%d", i, j)), j); err != nil {
							t.Errorf("put: %v", err)
							return
						}
					}
				}()
			}
			select {
			case <-done:
			case <-time.After(90 * time.Second):
				mu.Lock()
				t.Errorf("%d of %d items delivered", len(seen), total)
				mu.Unlock()
			}
			// Consumers still waiting end with their sessions.
			for _, s := range ss[producers : producers+consumers] {
				_ = s.Close(ctx)
			}
			wg.Wait()
			var dup []string
			for v, n := range seen {
				if n != 1 {
					dup = append(dup, fmt.Sprintf("%s×%d", v, n))
				}
			}
			sort.Strings(dup)
			if len(dup) > 0 || seen["doomed"] != 1 {
				t.Fatalf("delivered more than once: %v; doomed item %d times", dup, seen["doomed"])
			}
		})
	}
}

// A delayed item is never delivered before its delay, counted from before
// its Put, whatever due time its name claims (a producer whose clock is an
// hour fast or slow); items come out earliest due first; a Take that ends
// before the item is due takes nothing.
func testDelayNeverEarly(t *testing.T, h Harness) {
	// The steps before the first delay must be done within it: once it has
	// passed, the Poll and the Take meant to find nothing due may rightly
	// take "fast clock", and what comes out first is not seen. On a starved
	// machine such a run shows nothing, and runs again with a longer delay.
	for d := 400 * time.Millisecond; !delayNeverEarly(t, h, d); d *= 2 {
		if d >= 6400*time.Millisecond {
			t.Fatalf("every run took longer than its first delay (up to %v) before the delays", d)
		}
		t.Logf("the steps before the first delay %v took longer than it: again with %v", d, 2*d)
	}
}

// delayNeverEarly is testDelayNeverEarly with delay d; false if the steps
// meant to come before the first delay did not.
func delayNeverEarly(t *testing.T, h Harness, d time.Duration) bool {
	ctx := testCtx(t)
	name := h.Path(t)
	ss := sessions(t, h, 2)
	p, c := baton.NewDelayQueue(ss[0], name), baton.NewDelayQueue(ss[1], name)
	start := time.Now()
	if err := p.Put(ctx, []byte("later"), 2*d); err != nil {
		t.Fatal(err)
	}
	// Items as producers with skewed clocks would name them.
	conn := ss[0].Conn()
	if _, err := conn.Create(ctx, name, backend.DelayKind(d, time.Now().Add(-time.Hour)), []byte("fast clock"), backend.Sequential); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(ctx, name, backend.DelayKind(0, time.Now().Add(time.Hour)), []byte("slow clock, no delay"), backend.Sequential); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Poll(ctx); err != nil || string(v) != "slow clock, no delay" {
		t.Fatalf("Poll: %q %v, want the item without delay", v, err)
	}
	if _, err := c.Poll(ctx); !errors.Is(err, baton.ErrEmpty) && time.Since(start) < d {
		t.Fatalf("Poll before any delay passed: %v, want ErrEmpty", err)
	}
	cctx, cancel := context.WithTimeout(ctx, d/4)
	defer cancel()
	v, err := c.Take(cctx)
	if el := time.Since(start); el >= d {
		if err == nil && string(v) == "later" && el < 2*d {
			t.Fatalf("%q delivered %v after Put, before its delay %v", v, el, 2*d)
		}
		return false
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Take ending before the delay: %q %v", v, err)
	}
	for _, want := range []struct {
		v string
		d time.Duration
	}{{"fast clock", d}, {"later", 2 * d}} {
		v, err := c.Take(ctx)
		el := time.Since(start)
		if err != nil || string(v) != want.v {
			t.Fatalf("Take: %q %v, want %q", v, err, want.v)
		}
		if el < want.d {
			t.Fatalf("%q delivered %v after Put, before its delay %v", v, el, want.d)
		}
	}
	if n, _ := c.Len(ctx); n != 0 {
		t.Fatalf("Len %d after taking everything", n)
	}
	return true
}
