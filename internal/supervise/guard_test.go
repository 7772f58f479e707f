package supervise

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/proctest"
)

// TestGuardHandsOnDeadlineMovedAtStart: a deadline that moved while the
// watchdog was starting (renewals go on meanwhile) reaches the watchdog at
// the first tick. Before, keepPushing took the moved deadline as the one
// already handed on, and the watchdog kept the first, older one until the
// next renewal: under load it killed CMD of a hold that was fine.
func TestGuardHandsOnDeadlineMovedAtStart(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	g := &guard{in: w, stopPush: make(chan struct{})}
	first := time.Now().Add(time.Second)
	moved := first.Add(10 * time.Second)
	lines := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(r).ReadString('\n')
		lines <- l
	}()
	g.pushed.Add(1)
	go g.keepPushing(func() time.Time { return moved }, first)
	defer func() {
		g.freeze()
		_ = r.Close()
	}()
	select {
	case l := <-lines:
		at, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(l, "d ")), 10, 64)
		want := monoNow() + time.Until(moved).Nanoseconds()
		if err != nil || time.Duration(want-at).Abs() > 5*time.Second {
			t.Fatalf("pushed %q, want the moved deadline (d %d)", l, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the moved deadline was never handed on")
	}
}

// TestGuardFirstDeadlineIsCurrent: the first deadline the watchdog gets is
// the one as of when it is ready, not one read before it started. Before,
// a watchdog slow to start (a second on a loaded machine) read a deadline
// already past and killed CMD of a hold renewed meanwhile. A stand-in
// watchdog takes 1.5 s to start and records what it reads.
func TestGuardFirstDeadlineIsCurrent(t *testing.T) {
	t.Parallel()
	got := filepath.Join(t.TempDir(), "got")
	wd := exec.Command("sh", "-c", `sleep 1.5; echo ready; exec cat > "$0"`, got)
	g, err := startGuard(wd, os.Stderr, func() time.Time { return time.Now().Add(time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	now := monoNow()
	l := proctest.WaitFile(t, got, "\n", 10*time.Second)
	g.finish()
	at, err := strconv.ParseInt(strings.TrimPrefix(strings.SplitN(l, "\n", 2)[0], "d "), 10, 64)
	if err != nil {
		t.Fatalf("read %q", l)
	}
	if at <= now {
		t.Fatalf("the first deadline was %v in the past when the watchdog was ready", time.Duration(now-at))
	}
}

// TestGuardKeepsLastDeadlineAtTheEnd: when the hold ends its deadline
// drops to zero; that is not handed on, so the watchdog keeps the last
// deadline and the end reaches it as a stop (SIGTERM, then SIGKILL) from
// Run. Before, a Redis lock deleted by an operator had its zero
// deadline pushed in a race with the stop: the watchdog then killed CMD at
// once, without its SIGTERM (seen under -race in TestLoaded/admin-delete).
func TestGuardKeepsLastDeadlineAtTheEnd(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	g := &guard{in: w, stopPush: make(chan struct{})}
	first := time.Now().Add(time.Hour)
	var ended atomic.Bool
	expiry := func() time.Time {
		if ended.Load() {
			return time.Time{}
		}
		return first.Add(time.Minute) // a renewal
	}
	lines := make(chan string, 8)
	go func() {
		br := bufio.NewReader(r)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- strings.TrimSpace(l)
		}
	}()
	g.pushed.Add(1)
	go g.keepPushing(expiry, first)
	if l := <-lines; l == "d 0" {
		t.Fatalf("pushed %q for a live hold", l)
	}
	ended.Store(true)
	// The pusher ticks every 20 ms: the width of ten ticks, to see none
	// come.
	select {
	case l := <-lines:
		t.Fatalf("pushed %q after the hold ended", l)
	case <-time.After(10 * pushEvery):
	}
	g.freeze()
	_ = w.Close()
	_ = r.Close()
}
