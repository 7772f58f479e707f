package reliability

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
)

// A waiter process killed after a release handed it the lock, before it
// noticed: its node, first in line, is the lock's holder, and stays so
// until its session's row expires on the server's clock; then the next
// waiter, woken by its timer at that expiry, holds. Nothing hangs, and
// nobody holds sooner than the dead waiter's session allows.
func TestPostgresHandedToKilledWaiter(t *testing.T) {
	independent(t)
	tg := pgTarget(t)
	n := runs(2, 10)
	row := Row{Scenario: "hand-off to a waiter killed before it noticed", Store: "postgres", Runs: n}
	for i := range n {
		d, ok := pgHandedOnce(t, tg, i)
		row.Recovery = append(row.Recovery, d)
		if !ok {
			row.Violations++
		}
	}
	row.Note = "TTL " + tg.ttl.String() + "; the waiter SIGSTOPped, handed the lock, then SIGKILLed; recovery = hand-off → next waiter holds (bound: the dead waiter's TTL, + 1 s; at least two thirds of it, its renewal period)"
	record(row)
}

func pgHandedOnce(t *testing.T, tg target, run int) (time.Duration, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := tg.path()
	res := NewResource()
	defer res.Close()
	hs := tg.open(t, tg.addr)
	hm := baton.NewMutex(hs, name)
	held, err := hm.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := launchWorker(t, tg, name, res)
	await.Children(t, ctx, hs.Conn(), name, 10*time.Second, "the waiter process in line", await.AtLeast(2))
	next := baton.NewMutex(tg.open(t, tg.addr), name)
	got := make(chan *baton.Lease, 1)
	go func() {
		l, err := next.Lock(ctx)
		if err != nil {
			t.Errorf("run %d: the waiter behind the dead one: %v", run, err)
		}
		got <- l
	}()
	await.Children(t, ctx, hs.Conn(), name, 10*time.Second, "the next waiter in line", await.AtLeast(3))
	// Stop the waiter process so that it cannot notice the hand-off, hand
	// it the lock, then kill it.
	w.signal(syscall.SIGSTOP)
	w.waitStopped(t)
	handed := time.Now()
	if err := hm.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	w.signal(syscall.SIGKILL)
	l := <-got
	d := time.Since(handed)
	ok := l != nil && d <= tg.ttl+time.Second && d >= tg.ttl*2/3 && l.Token() > held.Token()
	if !ok {
		t.Errorf("run %d: next holder after %v (want the dead waiter's TTL %v, within 1 s), lease %v", run, d, tg.ttl, l)
	}
	if tried, _, _ := res.Counts(w.who); tried != 0 {
		ok = false
		t.Errorf("run %d: the killed waiter wrote %d times: it held before it was stopped", run, tried)
	}
	if l != nil {
		_ = next.Unlock(ctx)
	}
	return d, ok
}
