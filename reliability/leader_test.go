package reliability

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// leaderEnv, when set, makes the test binary run as a leader process
// (leaderMain) instead of running tests.
const leaderEnv = "BATON_RELIABILITY_LEADER"

// errResumedInvalid ends the leader's fn when its lease is found invalid.
var errResumedInvalid = errors.New("lease invalid")

// leaderMain is a separate process that leads an election through
// Election.Run, with fn doing a unit of work every 10 ms, as in issue 26's
// report: a loop on the ctx and a ticker. Before each unit it checks
// Valid. After 20 units it stops itself (SIGSTOP), between two units, as a
// GC pause or a stalled VM would stop it. It prints:
//
//	LEADING <token>
//	PAUSE <deadline unix ns>      (its lease's Deadline, then SIGSTOP)
//	INVALID <unix ns> <ctx done>  (the check before a unit said no)
//	DONE <unix ns> <valid>        (the select found ctx cancelled first)
//	WORK <token> <unix ns>        (a unit of work done)
//
// and exits once fn has returned. It stops by itself after a minute.
func leaderMain() int {
	kind, addr, name := os.Getenv("BATON_RW_KIND"), os.Getenv("BATON_RW_ADDR"), os.Getenv("BATON_RW_NAME")
	ttl, _ := time.ParseDuration(os.Getenv("BATON_RW_TTL"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := openStore(ctx, kind, addr, ttl)
	if err != nil {
		fmt.Println("ERROR", err)
		return 2
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		_ = s.Close(cctx)
	}()
	e := baton.NewElection(s, name)
	err = e.Run(ctx, []byte("paused"), func(work context.Context) error {
		lease := e.Lease()
		fmt.Printf("LEADING %d\n", lease.Token())
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for unit := 0; ; unit++ {
			select {
			case <-work.Done():
				// (Both may be ready on resuming; select picks either.)
				fmt.Printf("DONE %d %v\n", time.Now().UnixNano(), lease.Valid())
				cancel()
				return nil
			case <-tick.C:
			}
			// Right before the side effect: the check from the clock.
			// (ctx done is what the select above knows.)
			if !lease.Valid() {
				fmt.Printf("INVALID %d %v\n", time.Now().UnixNano(), work.Err() != nil)
				cancel()
				return errResumedInvalid
			}
			fmt.Printf("WORK %d %d\n", lease.Token(), time.Now().UnixNano())
			if unit == 20 {
				fmt.Printf("PAUSE %d\n", lease.Deadline().UnixNano())
				_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			}
		}
	})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, errResumedInvalid) && !errors.Is(err, baton.ErrSessionLost) {
		fmt.Println("ERROR", err)
		return 2
	}
	return 0
}

// PausedLeader (issue 26, item 5): a leader process in Election.Run stops
// (SIGSTOP) between two units of work for longer than its TTL; another
// candidate leads; the leader is continued. Its lease's Deadline, read just
// before the pause, must have passed when the other candidate leads, and
// on resuming it must do no unit of work at or after that Deadline: its
// check before the next unit says the lease is invalid, even when the loss
// has not reached its ctx yet (or its select finds ctx cancelled first,
// and then too the lease is invalid).
func TestPausedLeader(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.kind, func(t *testing.T) {
			n := runs(1, 10)
			row := Row{Scenario: "paused leader: Election.Run SIGSTOPped past its TTL", Store: tg.kind, Runs: n}
			oldCheckLate := 0
			for range n {
				margin, stale, ctxDone := pausedLeaderOnce(t, tg)
				row.Margins = append(row.Margins, margin)
				row.Violations += stale
				if !ctxDone {
					oldCheckLate++
				}
			}
			row.Note = fmt.Sprintf("margin = successor leads − paused leader's Deadline; at the first check after resuming, Valid said no in every run, while ctx was not yet cancelled in %d of %d (a select on ctx.Done() would have worked on)", oldCheckLate, n)
			record(row)
			t.Logf("paused leader %s: %s", tg.kind, row.Note)
		})
	}
}

// pausedLeaderOnce runs the scenario once and returns how long after the
// paused leader's Deadline the successor led, the number of units of work
// the leader did after resuming, and whether its ctx was already cancelled
// at its first check.
func pausedLeaderOnce(t *testing.T, tg target) (margin time.Duration, stale int, ctxDone bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := tg.path()
	w := spawn(t, tg, name, false, leaderEnv+"=1")
	first := w.next(t, 30*time.Second)
	token, err := strconv.ParseInt(strings.TrimPrefix(first, "LEADING "), 10, 64)
	if err != nil {
		t.Fatalf("leader: %q", first)
	}
	var deadline int64
	for deadline == 0 {
		l := w.next(t, 30*time.Second)
		switch {
		case strings.HasPrefix(l, "PAUSE "):
			deadline, _ = strconv.ParseInt(strings.TrimPrefix(l, "PAUSE "), 10, 64)
		case !strings.HasPrefix(l, "WORK "):
			t.Fatalf("leader before its pause: %q", l)
		}
	}
	w.waitStopped(t)
	other := tg.open(t, tg.addr)
	next := baton.NewElection(other, name)
	if err := next.Campaign(ctx, []byte("next")); err != nil {
		t.Fatalf("Campaign while the leader is paused: %v", err)
	}
	led := time.Now().UnixNano()
	if l := next.Lease(); l == nil || l.Token() <= token {
		t.Fatalf("successor's lease %v, want a token above %d", l, token)
	}
	margin = time.Duration(led - deadline)
	if margin <= 0 {
		t.Errorf("the successor led %v before the paused leader's Deadline", -margin)
	}
	w.signal(syscall.SIGCONT)
	stopped := false
	for l := range w.lines {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "WORK":
			// A unit after PAUSE but before the process stopped (a
			// stop lands on every thread a moment later) is no fault;
			// one at or after the Deadline is.
			if at, _ := strconv.ParseInt(f[2], 10, 64); at >= deadline {
				stale++
				t.Errorf("the resumed leader worked under token %s, %v after its Deadline and %v after the successor led", f[1], time.Duration(at-deadline), time.Duration(at-led))
			}
		case len(f) == 3 && f[0] == "INVALID":
			stopped, ctxDone = true, f[2] == "true"
		case len(f) == 3 && f[0] == "DONE":
			stopped, ctxDone = true, true
			if f[2] != "false" {
				t.Error("the resumed leader's ctx was cancelled, yet its lease was valid")
			}
		default:
			t.Errorf("resumed leader: %q", l)
		}
	}
	if !stopped {
		t.Error("the resumed leader never stopped working")
	}
	if err := w.cmd.Wait(); err != nil {
		t.Errorf("leader process: %v", err)
	}
	_ = next.Resign(ctx)
	return margin, stale, ctxDone
}
