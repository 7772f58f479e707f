package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// CMD's process group belongs to a watchdog: a second baton process
// (`baton watchdog`, hidden) that leads the group CMD joins. baton tells it,
// over a pipe, the lease's loss deadline (baton.Expirer: the last confirmed
// contact with the store plus the TTL minus the backend's margin) each time
// that deadline moves. The watchdog SIGTERMs the group (itself excepted: it
// ignores SIGTERM) --grace before the deadline, and SIGKILLs the whole
// group, itself included, when the deadline passes or when the pipe closes
// (baton died). So CMD is told to stop at least the grace before it is
// killed, and it and everything it started in its group stop no later than
// the moment the store could hand the lock on, whether baton is killed,
// stopped or starved: the watchdog keeps both times itself. When baton
// learns the hold ended, it asks the watchdog to stop the group ("t"):
// SIGTERM unless sent already, SIGKILL --kill-after later or at the
// deadline, whichever is first. Deadlines travel as CLOCK_MONOTONIC
// readings, a clock both processes share, so a message read late still
// means the same instant.
//
// baton → watchdog, one line each: "d <ns>" the loss deadline (0: lost
// already); "t <ns>" stop the group: SIGTERM now, SIGKILL at <ns> at the
// latest. watchdog → baton: "ready" (it ignores the signals meant for
// CMD); "term" (it sent the grace's SIGTERM); "fired" (the deadline
// passed: it kills the group); "killed" (it kills the group at the time
// a "t" set).

// pushEvery is how often baton checks whether the loss deadline moved.
// The deadline it hands on is at most this stale, which only makes it
// earlier.
const pushEvery = 20 * time.Millisecond

// monoNow is the system's monotonic clock, shared by every process.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // CLOCK_MONOTONIC is always there
	}
	return ts.Nano()
}

// guard is baton's side of a watchdog.
type guard struct {
	cmd    *exec.Cmd
	in     io.WriteCloser // deadlines and stops, one line each
	ready  chan struct{}  // closed when the watchdog ignores the signals meant for CMD
	termed chan struct{}  // closed when the watchdog reports the grace's SIGTERM
	fired  chan struct{}  // closed when the watchdog reports its deadline passed
	killed chan struct{}  // closed when the watchdog reports the SIGKILL a stop asked for
	gone   chan struct{}  // closed when the watchdog's output ends (it died)
	pgid   int            // the watchdog's process group, which CMD joins

	stopPush chan struct{}
	pushed   sync.WaitGroup
}

// startGuard starts the watchdog, which gives CMD's group the grace of
// stop. With expiry nil (a store whose holds cannot expire on their own)
// it has no deadline and only guards against baton's death.
func (m *Main) startGuard(expiry func() time.Time, stop stopSpec) (*guard, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot start the watchdog: %v", err)
	}
	return m.startGuardCmd(exec.Command(exe, "watchdog", "--grace", stop.grace.String(), "--kill-after", stop.killAfter.String()), expiry)
}

// startGuardCmd is startGuard with the watchdog's command given.
func (m *Main) startGuardCmd(wd *exec.Cmd, expiry func() time.Time) (*guard, error) {
	var err error
	g := &guard{ready: make(chan struct{}), termed: make(chan struct{}), fired: make(chan struct{}), killed: make(chan struct{}),
		gone: make(chan struct{}), stopPush: make(chan struct{})}
	g.cmd = wd
	g.cmd.Stderr = m.Stderr
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if g.in, err = g.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := g.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := g.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start the watchdog: %v", err)
	}
	g.pgid = g.cmd.Process.Pid
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			switch sc.Text() {
			case "ready":
				close(g.ready)
			case "term":
				close(g.termed)
			case "fired":
				close(g.fired)
			case "killed":
				close(g.killed)
			}
		}
		close(g.gone)
	}()
	// CMD joins the group only once a signal sent to the group can no
	// longer end the watchdog.
	select {
	case <-g.ready:
	case <-g.gone:
		_ = g.in.Close()
		_ = g.cmd.Wait()
		return nil, fmt.Errorf("the watchdog process ended at its start")
	}
	if expiry != nil {
		// The deadline as of now, not as of before the watchdog started:
		// a process start can take a second on a loaded machine, and
		// renewals went on meanwhile. CMD starts after this, so baton
		// stopped or killed from here on still finds it guarded.
		first := expiry()
		if err := g.push(first); err != nil {
			g.finish()
			return nil, err
		}
		g.pushed.Add(1)
		go g.keepPushing(expiry, first)
	}
	return g, nil
}

// push hands the watchdog a new deadline.
func (g *guard) push(t time.Time) error {
	at := int64(0) // the zero Time: lost already
	if !t.IsZero() {
		at = monoNow() + time.Until(t).Nanoseconds()
	}
	_, err := fmt.Fprintf(g.in, "d %d\n", at)
	return err
}

// keepPushing hands on every move of the deadline from last, the one the
// watchdog has, until stopped. (A deadline that moved while the watchdog
// started, which under load can take a second, is handed on at the first
// tick, not at the next move.) The zero Time, a hold that has ended, is
// not handed on: the end reaches runCmd, which asks the watchdog to stop
// the group (SIGTERM, then SIGKILL --kill-after later or at the last
// deadline), and the watchdog keeps the last deadline meanwhile. Handing
// it on would race that request: a hold lost by a delete, whose deadline
// drops to zero, had its CMD killed at once, or given SIGTERM, as the
// race went.
func (g *guard) keepPushing(expiry func() time.Time, last time.Time) {
	defer g.pushed.Done()
	t := time.NewTicker(pushEvery)
	defer t.Stop()
	for {
		select {
		case <-g.stopPush:
			return
		case <-t.C:
		}
		if e := expiry(); !e.IsZero() && !e.Equal(last) {
			last = e
			if g.push(e) != nil {
				return
			}
		}
	}
}

// freeze stops moving the deadline: the hold has ended, so the deadline
// it had is the last one.
func (g *guard) freeze() {
	select {
	case <-g.stopPush:
	default:
		close(g.stopPush)
	}
	g.pushed.Wait()
}

// finish kills what is left of the group (CMD has exited; nothing it left
// behind may outlive the hold) and reaps the watchdog.
func (g *guard) finish() {
	g.freeze()
	_ = syscall.Kill(-g.pgid, syscall.SIGKILL)
	_ = g.in.Close()
	<-g.gone
	_ = g.cmd.Wait()
}

// stopGroup asks the watchdog to stop the group: SIGTERM now (unless it
// sent one already), SIGKILL after killAfter or at the deadline, whichever
// is first. The deadline stops moving first: the hold is over.
func (g *guard) stopGroup(killAfter time.Duration) error {
	g.freeze()
	_, err := fmt.Fprintf(g.in, "t %d\n", monoNow()+killAfter.Nanoseconds())
	return err
}

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// hasFired reports whether the watchdog stopped the group at its deadline.
func (g *guard) hasFired() bool { return closed(g.fired) }

// hasTermed reports whether the watchdog sent the group the grace's
// SIGTERM: no contact with the store was confirmed until the grace before
// the deadline.
func (g *guard) hasTermed() bool { return closed(g.termed) }

// hasKilled reports whether the watchdog SIGKILLed the group when a stop's
// kill-after ran out.
func (g *guard) hasKilled() bool { return closed(g.killed) }

// watchdog is the hidden `baton watchdog --grace G --kill-after K`: it
// leads the process group CMD runs in, SIGTERMs the group G before the
// last deadline read from stdin, and SIGKILLs it when that deadline passes,
// K after the SIGTERM, or when stdin closes (see the top of this file).
func (m *Main) watchdog(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("watchdog", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	grace := fs.Duration("grace", 0, "")
	killAfter := fs.Duration("kill-after", 10*time.Second, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		return usageErr("watchdog: [--grace G] [--kill-after K] only (started by baton itself)")
	}
	// Signals meant for CMD reach the whole group; only SIGKILL (or the
	// deadline) may end the watchdog.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPIPE)
	// A watchdog that wakes late eats into the grace and into the margin
	// before the store can hand the lock on; it sleeps nearly all the
	// time, so a higher priority costs the machine nothing.
	raisePriority()
	fmt.Fprintln(m.Stdout, "ready")
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(m.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	w := watch{grace: grace.Nanoseconds(), killAfter: killAfter.Nanoseconds()}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		act, next := w.step(monoNow())
		switch act {
		case actTerm:
			_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGTERM)
			continue
		case actGrace:
			// Said first: CMD may exit on the signal, and baton then
			// kills the group, this process included.
			fmt.Fprintln(m.Stdout, "term")
			_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGTERM)
			continue
		case actFire:
			fmt.Fprintln(m.Stdout, "fired")
			return killGroup()
		case actKill:
			fmt.Fprintln(m.Stdout, "killed")
			return killGroup()
		}
		timer.Stop()
		if next != 0 {
			timer.Reset(time.Duration(next - monoNow()))
		}
		select {
		case l, ok := <-lines:
			if !ok {
				return killGroup() // baton is gone
			}
			if !w.read(l) {
				return killGroup()
			}
		case <-timer.C:
		}
	}
}

// watch is the watchdog's state: what it was told, what it did. Times are
// CLOCK_MONOTONIC nanoseconds; 0 is unset.
type watch struct {
	grace     int64
	killAfter int64 // SIGTERM to SIGKILL after the grace's SIGTERM
	deadline  int64 // the loss deadline (unset: none yet)
	lost      bool  // told the hold is lost already ("d 0")
	killAt    int64 // the SIGKILL after a SIGTERM, if before the deadline
	termed    bool  // SIGTERM sent
	stop      bool  // a stop asks for SIGTERM now
}

// read takes one line from baton, and reports false for a line that is
// not one of the protocol's.
func (w *watch) read(l string) bool {
	kind, v, ok := strings.Cut(l, " ")
	at, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil {
		return false
	}
	switch kind {
	case "d":
		w.deadline, w.lost = at, at == 0
	case "t":
		w.stop = true
		if w.killAt == 0 || at < w.killAt {
			w.killAt = at
		}
	default:
		return false
	}
	return true
}

// What the watchdog does now.
const (
	actWait  = iota // nothing yet: wake at next
	actTerm         // a stop's SIGTERM to the group, then look again
	actGrace        // the grace's SIGTERM to the group, then look again
	actFire         // the deadline passed: SIGKILL the group
	actKill         // a stop's kill-after ran out: SIGKILL the group
)

// step says what to do at now, and when to look again if nothing (0:
// only when baton says something).
func (w *watch) step(now int64) (act int, next int64) {
	switch {
	case w.lost || (w.deadline != 0 && now >= w.deadline):
		return actFire, 0
	case w.killAt != 0 && now >= w.killAt:
		return actKill, 0
	case !w.termed && w.stop:
		w.termed = true
		return actTerm, 0
	case !w.termed && w.deadline != 0 && w.grace > 0 && now >= w.deadline-w.grace:
		// If contact comes back and the deadline moves on, CMD still
		// has only --kill-after to finish.
		w.termed = true
		if k := now + w.killAfter; w.killAt == 0 || k < w.killAt {
			w.killAt = k
		}
		return actGrace, 0
	}
	for _, t := range []int64{w.deadline, w.killAt} {
		if t != 0 && (next == 0 || t < next) {
			next = t
		}
	}
	if !w.termed && w.deadline != 0 && w.grace > 0 {
		next = min(next, w.deadline-w.grace)
	}
	return actWait, next
}

// killGroup SIGKILLs the watchdog's own process group, itself included.
func killGroup() error {
	return syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
}
