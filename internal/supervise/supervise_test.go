package supervise

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/proctest"
)

// group is a CMD that outlives SIGTERM, and its grandchild, which ignores
// it: CMD stamps each SIGTERM it gets in terms; the grandchild writes its
// pid to pid, then a stamp to ticks every 10 ms. Only a SIGKILL of the
// whole group ends both.
type group struct {
	terms, ticks, pid string
}

func newGroup(t *testing.T) *group {
	dir := t.TempDir()
	return &group{terms: filepath.Join(dir, "terms"), ticks: filepath.Join(dir, "ticks"), pid: filepath.Join(dir, "pid")}
}

// argv is the group's CMD.
func (g *group) argv() []string {
	const script = `trap 'date +%s%N >> "$0"' TERM
sh -c 'trap "" TERM; echo $$ > "$0"; while :; do date +%s%N >> "$1"; sleep 0.01; done' "$2" "$1" &
while :; do sleep 0.01; done`
	return []string{"sh", "-c", script, g.terms, g.ticks, g.pid}
}

// grandchild waits for the grandchild to run and returns its pid, killed
// at the test's end if the test failed to.
func (g *group) grandchild(t *testing.T) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(proctest.WaitFile(t, g.pid, "\n", 20*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// waitTicking waits for the grandchild's first tick.
func (g *group) waitTicking(t *testing.T) int {
	pid := g.grandchild(t)
	proctest.WaitFile(t, g.ticks, "\n", 20*time.Second)
	return pid
}

// waitDead waits up to d for pid to be gone.
func waitDead(t *testing.T, pid int, d time.Duration, what string) {
	t.Helper()
	await.Until(t, d, what, func() bool { return !proctest.Alive(pid) })
}

// TestRunKillsAtDeadline: a CMD that outlives SIGTERM is told to stop
// (one SIGTERM) the grace before the loss deadline, not earlier, and
// killed with everything in its group (a grandchild that ignores SIGTERM)
// at the deadline, not earlier; without a grace it gets no SIGTERM.
func TestRunKillsAtDeadline(t *testing.T) {
	t.Parallel()
	for _, grace := range []time.Duration{time.Second, 0} {
		t.Run("grace="+grace.String(), func(t *testing.T) {
			t.Parallel()
			g := newGroup(t)
			deadline := time.Now().Add(4 * time.Second)
			res, err := Run(Spec{
				Argv: g.argv(), Env: os.Environ(), Stderr: os.Stderr,
				Stop: Stop{Grace: grace, KillAfter: time.Minute}, Watchdog: watchdogCmd(),
				Expiry: func() time.Time { return deadline },
			})
			ended := time.Now()
			if err != nil {
				t.Fatal(err)
			}
			want := Result{Status: 128 + int(syscall.SIGKILL), Lost: true, Expired: true, Jeopardy: grace > 0}
			if res != want {
				t.Fatalf("result %+v, want %+v", res, want)
			}
			if ended.Before(deadline) {
				t.Fatalf("CMD killed %v before the deadline", deadline.Sub(ended))
			}
			pid := g.grandchild(t)
			waitDead(t, pid, 10*time.Second, "the grandchild's death")
			terms, ticks := readStamps(t, g.terms), readStamps(t, g.ticks)
			last := time.Unix(0, ticks[len(ticks)-1])
			t.Logf("killed %v after the deadline (Run returned); last tick %v after it", ended.Sub(deadline), last.Sub(deadline))
			if grace == 0 {
				if len(terms) != 0 {
					t.Fatalf("%d SIGTERMs without a grace", len(terms))
				}
				return
			}
			if len(terms) != 1 {
				t.Fatalf("%d SIGTERMs, want 1", len(terms))
			}
			term := time.Unix(0, terms[0])
			if early := deadline.Add(-grace).Sub(term); early > 0 {
				t.Fatalf("SIGTERM %v before the grace began", early)
			}
			if !last.After(term) {
				t.Fatalf("the grandchild's last tick (%v) is not after the SIGTERM (%v): not the SIGKILL ended it", last, term)
			}
		})
	}
}

// TestRunLostStopsGroup: when the hold ends, a CMD that outlives SIGTERM
// gets one SIGTERM, and its group SIGKILL KillAfter later, with a
// watchdog (which sends both) and without.
func TestRunLostStopsGroup(t *testing.T) {
	t.Parallel()
	for _, guarded := range []bool{true, false} {
		t.Run("watchdog="+strconv.FormatBool(guarded), func(t *testing.T) {
			t.Parallel()
			g := newGroup(t)
			lost := make(chan struct{})
			sp := Spec{Argv: g.argv(), Env: os.Environ(), Stderr: os.Stderr, Lost: lost, Stop: Stop{Grace: time.Second, KillAfter: 500 * time.Millisecond}}
			if guarded {
				sp.Watchdog = watchdogCmd()
				sp.Expiry = func() time.Time { return time.Now().Add(time.Hour) }
			}
			type ran struct {
				res Result
				err error
				at  time.Time
			}
			done := make(chan ran, 1)
			go func() {
				res, err := Run(sp)
				done <- ran{res, err, time.Now()}
			}()
			pid := g.waitTicking(t)
			closedAt := time.Now()
			close(lost)
			var r ran
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("CMD still runs 30s after the loss")
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			want := Result{Status: 128 + int(syscall.SIGKILL), Lost: true}
			if r.res != want {
				t.Fatalf("result %+v, want %+v", r.res, want)
			}
			if d := r.at.Sub(closedAt); d < sp.Stop.KillAfter {
				t.Fatalf("CMD killed %v after the loss, before --kill-after %v", d, sp.Stop.KillAfter)
			}
			waitDead(t, pid, 10*time.Second, "the grandchild's death")
			terms := readStamps(t, g.terms)
			if len(terms) != 1 || time.Unix(0, terms[0]).Before(closedAt) {
				t.Fatalf("SIGTERM stamps %v, want one after the loss at %d", terms, closedAt.UnixNano())
			}
		})
	}
}

// TestWatchdogOutlivesSupervisor: the watchdog stops CMD's group on its
// own when the supervisor is SIGKILLed (at once, long before the
// deadline) or SIGSTOPped (SIGTERM the grace before the deadline, SIGKILL
// at it, while the supervisor is still stopped; continued, it reports
// both).
func TestWatchdogOutlivesSupervisor(t *testing.T) {
	t.Parallel()
	t.Run("killed", func(t *testing.T) {
		t.Parallel()
		g := newGroup(t)
		deadline := time.Now().Add(time.Hour)
		sup, _ := startSupervisor(t, deadline, 0, g)
		pid := g.waitTicking(t)
		if err := sup.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		_ = sup.Wait()
		waitDead(t, pid, 20*time.Second, "the grandchild's death after the supervisor's")
		t.Logf("grandchild dead %v after the supervisor's SIGKILL", time.Since(killed))
	})
	t.Run("stopped", func(t *testing.T) {
		t.Parallel()
		g := newGroup(t)
		const grace = time.Second
		deadline := time.Now().Add(5 * time.Second)
		sup, out := startSupervisor(t, deadline, grace, g)
		pid := g.waitTicking(t)
		if err := sup.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sup.Process.Signal(syscall.SIGCONT) })
		await.Until(t, 10*time.Second, "the supervisor stopped", func() bool { return procState(sup.Process.Pid) == "T" })
		waitDead(t, pid, time.Until(deadline)+20*time.Second, "the grandchild's death")
		if s := procState(sup.Process.Pid); s != "T" {
			t.Fatalf("the supervisor's state is %q: it ran before the grandchild died", s)
		}
		terms, ticks := readStamps(t, g.terms), readStamps(t, g.ticks)
		if len(terms) != 1 || time.Unix(0, terms[0]).Before(deadline.Add(-grace)) {
			t.Fatalf("SIGTERM stamps %v, want one from %d on", terms, deadline.Add(-grace).UnixNano())
		}
		last := time.Unix(0, ticks[len(ticks)-1])
		if !last.After(time.Unix(0, terms[0])) {
			t.Fatal("the grandchild's last tick is not after the SIGTERM: not the SIGKILL ended it")
		}
		t.Logf("last tick %v after the deadline", last.Sub(deadline))
		if err := sup.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if err := sup.Wait(); err != nil {
			t.Fatalf("supervisor: %v", err)
		}
		var res Result
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("supervisor printed %q: %v", out, err)
		}
		if want := (Result{Status: 128 + int(syscall.SIGKILL), Lost: true, Expired: true, Jeopardy: true}); res != want {
			t.Fatalf("result %+v, want %+v", res, want)
		}
	})
}

// startSupervisor starts this binary as a supervisor of g's CMD with the
// given deadline and grace, and returns it and its stdout.
func startSupervisor(t *testing.T, deadline time.Time, grace time.Duration, g *group) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	args := append([]string{"supervisor", strconv.FormatInt(deadline.UnixNano(), 10), grace.String(), "--"}, g.argv()...)
	sup := exec.Command(os.Args[0], args...)
	out := &bytes.Buffer{}
	// A file, not a pipe: Wait must not wait for a survivor of the
	// supervisor that holds its stderr.
	sup.Stdout, sup.Stderr = out, os.Stderr
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sup.Process.Kill()
		_ = sup.Wait()
	})
	return sup, out
}

// TestRunWatchdogKilled: a watchdog killed from outside leaves CMD
// unguarded, so Run SIGKILLs the group and says so.
func TestRunWatchdogKilled(t *testing.T) {
	t.Parallel()
	g := newGroup(t)
	done := make(chan Result, 1)
	go func() {
		res, _ := Run(Spec{Argv: g.argv(), Env: os.Environ(), Stderr: os.Stderr, Stop: Stop{KillAfter: time.Minute}, Watchdog: watchdogCmd()})
		done <- res
	}()
	pid := g.waitTicking(t)
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil { // the group's leader: the watchdog
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if want := (Result{Status: 128 + int(syscall.SIGKILL), WatchdogDied: true}); res != want {
			t.Fatalf("result %+v, want %+v", res, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("CMD still runs 30s after its watchdog died")
	}
	waitDead(t, pid, 10*time.Second, "the grandchild's death")
}

// TestRunPassesSignals: a caught signal reaches CMD's group; a second
// SIGTERM is a SIGKILL.
func TestRunPassesSignals(t *testing.T) {
	t.Parallel()
	g := newGroup(t)
	sigs := make(chan os.Signal, 1)
	done := make(chan Result, 1)
	go func() {
		res, _ := Run(Spec{Argv: g.argv(), Env: os.Environ(), Stderr: os.Stderr, Signals: sigs})
		done <- res
	}()
	pid := g.waitTicking(t)
	sigs <- syscall.SIGTERM
	proctest.WaitFile(t, g.terms, "\n", 20*time.Second)
	if !proctest.Alive(pid) {
		t.Fatal("the grandchild, which ignores SIGTERM, died of one")
	}
	sigs <- syscall.SIGTERM
	select {
	case res := <-done:
		if want := (Result{Status: 128 + int(syscall.SIGKILL), Stopped: true}); res != want {
			t.Fatalf("result %+v, want %+v", res, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("CMD still runs 30s after a second SIGTERM")
	}
	waitDead(t, pid, 10*time.Second, "the grandchild's death")
}

// TestRunCannotStart: a CMD that cannot be started is a StartError with
// the shell's status, 127 not found, 126 not runnable, and its watchdog
// is gone.
func TestRunCannotStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		argv0  string
		status int
	}{{filepath.Join(dir, "missing"), 127}, {dir, 126}} {
		res, err := Run(Spec{Argv: []string{tc.argv0}, Watchdog: watchdogCmd(), Expiry: func() time.Time { return time.Now().Add(time.Hour) }})
		var se *StartError
		if !errors.As(err, &se) || res.Status != tc.status || se.Name != tc.argv0 {
			t.Errorf("%s: result %+v, error %v; want status %d and a StartError", tc.argv0, res, err, tc.status)
		}
	}
}
