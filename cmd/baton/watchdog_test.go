package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/proctest"
)

// watchdogRuns is how many times each watchdog scenario runs per store:
// 1 in CI, more from $BATON_WATCHDOG_RUNS to measure the margins that
// docs/RELIABILITY.md reports.
func watchdogRuns(t *testing.T) int { return runsFrom(t, "BATON_WATCHDOG_RUNS") }

// TestWatchdogBatonKilled: SIGKILL of `baton lock` while CMD's grandchild
// runs. The watchdog sees baton's pipe close and kills CMD's group; the
// grandchild's last write comes before the next holder's CMD starts.
func TestWatchdogBatonKilled(t *testing.T) {
	t.Parallel()
	watchdogScenario(t, "kill", func(holder *proc) error {
		return holder.cmd.Process.Signal(syscall.SIGKILL)
	})
}

// TestWatchdogBatonStopped: SIGSTOP of `baton lock` for longer than its
// TTL. The watchdog kills CMD's group at the loss deadline baton last
// handed it; the grandchild's last write comes before the next holder's
// CMD starts, and baton, continued, exits 76.
func TestWatchdogBatonStopped(t *testing.T) {
	t.Parallel()
	watchdogScenario(t, "stop", func(holder *proc) error {
		return holder.cmd.Process.Signal(syscall.SIGSTOP)
	})
}

// watchdogAttempts bounds the attempts at one run: an attempt is void when
// the holder, starved on a loaded machine, loses its 2 s lease on its own
// before the test hits it (its watchdog then stops CMD, which the attempt
// still checks).
const watchdogAttempts = 3

// watchdogScenario runs the scenario watchdogRuns times on every store:
// a holder's CMD starts a grandchild that appends a timestamp every 10 ms;
// a second client waits for the same lock; hit is done to the holder's
// baton; the second client's CMD records when it starts.
func watchdogScenario(t *testing.T, kind string, hit func(holder *proc) error) {
	runs := watchdogRuns(t)
	eachStore(t, false, func(t *testing.T, st testStore, e []string) {
		var margins []time.Duration
		for i := range runs {
			for a := 1; ; a++ {
				m, hitDone := watchdogOnce(t, st, e, fmt.Sprintf("/wd-%s-%d-%d", kind, i, a), kind, hit)
				if hitDone {
					margins = append(margins, m)
					break
				}
				t.Logf("run %d attempt %d void: the holder lost its lease on its own before the %s (margin %v, 0 if before CMD wrote)", i, a, kind, m.Round(time.Millisecond))
				if a == watchdogAttempts {
					t.Fatalf("run %d: in all %d attempts the holder lost its 2 s lease before the %s: the machine starves baton", i, a, kind)
				}
			}
		}
		slices.Sort(margins)
		t.Logf("watchdog margin %s %s: min %v median %v over %d runs (the next holder's start minus the grandchild's last write)",
			kind, st.name, margins[0].Round(time.Millisecond), margins[len(margins)/2].Round(time.Millisecond), len(margins))
	})
}

// watchdogOnce runs the scenario once and returns the margin, and whether
// the holder was hit (false: it had lost its lease on its own before).
// Whatever ended the hold, it asserts the promise: the grandchild is dead,
// and wrote nothing, by the time the next holder's CMD started. The next
// holder's CMD stamps its start and then copies the ticks file; the copy
// must equal the final file, so a tick stamped in time but appended late
// fails too.
func watchdogOnce(t *testing.T, st testStore, e []string, name, kind string, hit func(*proc) error) (time.Duration, bool) {
	dir := t.TempDir()
	ticks, pidFile, started, seen := filepath.Join(dir, "ticks"), filepath.Join(dir, "pid"), filepath.Join(dir, "started"), filepath.Join(dir, "seen")
	loop := filepath.Join(dir, "loop.sh")
	script := `echo $$ > "$1"; while :; do date +%s%N >> "$2"; sleep 0.01; done` + "\n"
	if err := os.WriteFile(loop, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	// The outer sh stays (";true"), so the loop runs in a grandchild. Its
	// output is not baton's, so that a surviving grandchild cannot keep the
	// test waiting for baton's pipes to close.
	holder := start(t, e, "lock", "--ttl", "2s", name, "--", "sh", "-c", `sh "$0" "$1" "$2" >/dev/null 2>&1; true`, loop, pidFile, ticks)
	if !waitTicks(t, ticks, holder) {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(proctest.WaitFile(t, pidFile, "\n", time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // if the test failed
	// The next holder's own TTL does not bear on the promise; a long one
	// keeps its CMD from being stopped, on a starved machine, before it
	// has recorded anything.
	other := start(t, e, "lock", "--ttl", "20s", name, "--", "sh", "-c", `date +%s%N > "$0"; cat "$1" > "$2"`, started, ticks, seen)
	hitDone := false
	if !st.sessions || waitQueued(t, e, name, holder) {
		hitDone = hit(holder) == nil
		if kind == "stop" && hitDone {
			t.Cleanup(func() { _ = holder.cmd.Process.Signal(syscall.SIGCONT) })
		}
	}
	if code := other.wait(30 * time.Second); code != 0 {
		t.Fatalf("next holder exit %d: %q", code, other.stderr.String())
	}
	if proctest.Alive(pid) {
		t.Fatalf("the grandchild (pid %d) still runs after the next holder's CMD ran", pid)
	}
	next := readNanos(t, started)
	got, err := os.ReadFile(ticks)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(got))
	last, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
	if err != nil {
		t.Fatalf("ticks %q", got)
	}
	if last >= next {
		t.Fatalf("the grandchild wrote at %d, %v after the next holder's CMD started; holder %q", last, time.Duration(last-next), holder.stderr.String())
	}
	if before, err := os.ReadFile(seen); err != nil || string(before) != string(got) {
		t.Fatalf("the grandchild appended %d bytes after the next holder's CMD started (%v); holder %q", len(got)-len(before), err, holder.stderr.String())
	}
	switch {
	case !hitDone:
		if code := holder.wait(20 * time.Second); code != exitLost {
			t.Fatalf("holder that lost its lease on its own: exit %d, want 76; stderr %q", code, holder.stderr.String())
		}
	case kind == "stop":
		// (A holder hit as it exited, having lost its lease on its own, is
		// gone already.)
		_ = holder.cmd.Process.Signal(syscall.SIGCONT)
		if code := holder.wait(20 * time.Second); code != exitLost {
			t.Fatalf("continued holder exit %d, want 76; stderr %q", code, holder.stderr.String())
		}
	}
	return time.Duration(next - last), hitDone
}

// waitTicks waits until the holder's grandchild has written a tick, and
// reports true, or false if the holder lost its lease (exit 76) first.
func waitTicks(t *testing.T, ticks string, holder *proc) bool {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(ticks); strings.Contains(string(b), "\n") {
			return true
		}
		select {
		case <-holder.done:
			if holder.code != exitLost {
				t.Fatalf("holder exit %d before its CMD wrote; stderr %q", holder.code, holder.stderr.String())
			}
			return false
		case <-time.After(10 * time.Millisecond): // poll interval
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder's grandchild wrote nothing within 30s; stderr %q", holder.stderr.String())
		}
	}
}

// waitQueued waits until status shows the holder's node and one waiting,
// and reports true, or false if the holder exits first.
func waitQueued(t *testing.T, e []string, name string, holder *proc) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	child := strings.TrimPrefix(name, "/") + "/" // NAME/child on etcd, /NAME/child on zk
	for {
		out, stderr, code := run(t, e, "status", name)
		if code != 0 {
			t.Fatalf("status: exit %d %q", code, stderr)
		}
		if strings.Contains(out, "1 waiting") && strings.Count(out, child) == 2 {
			return true
		}
		select {
		case <-holder.done:
			return false
		case <-time.After(20 * time.Millisecond): // poll interval
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed 2 nodes: %q", out)
		}
	}
}

func readNanos(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %q", path, b)
	}
	return n
}

// startGrandchild starts baton args with a CMD whose grandchild loops,
// and returns baton and the grandchild's pid.
func startGrandchild(t *testing.T, e []string, args ...string) (*proc, int) {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	args = append(args, "--", "sh", "-c", `sh -c 'echo $$ > "$0"; while :; do sleep 0.05; done' "$0" >/dev/null 2>&1; true`, pidFile)
	p := start(t, e, args...)
	pid, err := strconv.Atoi(strings.TrimSpace(proctest.WaitFile(t, pidFile, "\n", 10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // if the test failed
	return p, pid
}

// waitDead waits up to d for pid to be gone.
func waitDead(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for proctest.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs %v later", pid, d)
		}
		<-time.After(5 * time.Millisecond) // poll interval
	}
}

// TestWatchdogElectAndSemaphore: elect and semaphore run CMD under the
// watchdog too: SIGKILL of baton ends CMD's grandchild at once.
func TestWatchdogElectAndSemaphore(t *testing.T) {
	t.Parallel()
	e, _ := etcdEnv(t)
	for _, args := range [][]string{{"elect", "/wd-elect"}, {"semaphore", "-n", "1", "/wd-sem"}} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			p, pid := startGrandchild(t, e, args...)
			p.signal(syscall.SIGKILL)
			waitDead(t, pid, 5*time.Second)
		})
	}
}

// TestWatchdogKilledStopsCmd: if the watchdog itself is killed, CMD is
// unguarded, so baton stops CMD's group and exits 1.
func TestWatchdogKilledStopsCmd(t *testing.T) {
	t.Parallel()
	e, _ := etcdEnv(t)
	p, pid := startGrandchild(t, e, "lock", "/wd-guard")
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil { // the group's leader: the watchdog
		t.Fatal(err)
	}
	if code := p.wait(10 * time.Second); code != exitFailure || !strings.Contains(p.stderr.String(), "watchdog process was killed") {
		t.Fatalf("exit %d, stderr %q", code, p.stderr.String())
	}
	waitDead(t, pid, time.Second)
}
