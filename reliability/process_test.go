package reliability

import (
	"context"
	"io"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
)

// Pause: SIGSTOP a holder process for longer than its TTL (a GC pause), let
// another client acquire and write, then SIGCONT it. The fenced resource
// must reject every write the stale holder attempts.
func TestPause(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.kind, func(t *testing.T) {
			n := runs(1, 5)
			row := Row{Scenario: "pause: holder SIGSTOPped past its TTL", Store: tg.kind, Runs: n}
			var staleTried, staleAccepted int
			for range n {
				tried, accepted, recovery := pauseOnce(t, tg)
				staleTried += tried
				staleAccepted += accepted
				row.Violations += accepted
				row.Recovery = append(row.Recovery, recovery)
			}
			if staleAccepted > 0 {
				t.Errorf("%d stale writes accepted", staleAccepted)
			}
			row.Note = "stale writes attempted " + strconv.Itoa(staleTried) + ", accepted " + strconv.Itoa(staleAccepted) + "; recovery = SIGSTOP → next holder"
			record(row)
		})
	}
}

func pauseOnce(t *testing.T, tg target) (staleTried, staleAccepted int, recovery time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := NewResource()
	defer res.Close()
	name := tg.path()
	w := startWorker(t, tg, name, res, "BATON_RW_PAUSE_MIDWRITE=1")
	other := tg.open(t, tg.addr)
	if line := w.next(t, 10*time.Second); line != "PAUSING" {
		t.Fatalf("worker said %q, want PAUSING", line)
	}
	w.signal(syscall.SIGSTOP)
	w.waitStopped(t)
	stopped := time.Now()
	l, err := baton.NewMutex(other, name).Lock(ctx)
	if err != nil {
		t.Fatalf("Lock while the holder is paused: %v", err)
	}
	recovery = time.Since(stopped)
	if l.Token() <= w.token {
		t.Fatalf("new token %d not above the paused holder's %d", l.Token(), w.token)
	}
	if !res.Write("new-holder", l.Token()) {
		t.Fatal("the new holder's write was rejected")
	}
	w.signal(syscall.SIGCONT)
	if _, err := io.WriteString(w.stdin, "GO\n"); err != nil {
		t.Fatal(err)
	}
	// The resumed worker must notice the loss on its own.
	if line := w.next(t, 30*time.Second); !strings.HasPrefix(line, "LOST") {
		t.Fatalf("resumed worker said %q, want LOST", line)
	}
	tried, acc, _ := res.Counts(w.who)
	if tried == 0 {
		t.Fatal("the resumed worker attempted no write: the scenario did not run")
	}
	return tried, acc, recovery
}

// Crash: kill -9 a holder process; the next waiter acquires within TTL +
// 1 s.
func TestCrash(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.kind, func(t *testing.T) {
			n := runs(2, 10)
			row := Row{Scenario: "crash: holder kill -9", Store: tg.kind, Runs: n}
			for i := range n {
				d := crashOnce(t, tg)
				row.Recovery = append(row.Recovery, d)
				if bound := tg.ttl + time.Second; d > bound {
					row.Violations++
					t.Errorf("run %d: next holder after %v, bound %v", i, d, bound)
				}
			}
			row.Note = "recovery = kill → next holder (bound TTL " + tg.ttl.String() + " + 1s)"
			record(row)
		})
	}
}

func crashOnce(t *testing.T, tg target) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := NewResource()
	defer res.Close()
	name := tg.path()
	w := startWorker(t, tg, name, res)
	other := tg.open(t, tg.addr)
	got := make(chan time.Time, 1)
	go func() {
		if _, err := baton.NewMutex(other, name).Lock(ctx); err != nil {
			t.Errorf("Lock after the crash: %v", err)
		}
		got <- time.Now()
	}()
	// Kill only once the waiter is queued behind the worker.
	await.Children(t, ctx, other.Conn(), name, 10*time.Second, "the waiter to queue", await.AtLeast(2))
	killed := time.Now()
	w.signal(syscall.SIGKILL)
	return (<-got).Sub(killed)
}
