package main

import (
	"bufio"
	"context"
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
// that deadline moves. The watchdog SIGKILLs the whole group, itself
// included, when the deadline passes or when the pipe closes (baton died).
// So CMD and everything it started in its group stop no later than the
// moment the store could hand the lock on, whether baton is killed,
// stopped or starved. Deadlines travel as CLOCK_MONOTONIC readings, a clock
// both processes share, so a message read late still means the same
// instant.

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
	cmd   *exec.Cmd
	in    io.WriteCloser // deadlines, one "d <monotonic ns>" line each
	ready chan struct{}  // closed when the watchdog ignores the signals meant for CMD
	fired chan struct{}  // closed when the watchdog reports its deadline passed
	gone  chan struct{}  // closed when the watchdog's output ends (it died)
	pgid  int            // the watchdog's process group, which CMD joins

	stopPush chan struct{}
	pushed   sync.WaitGroup
}

// startGuard starts the watchdog. With expiry nil (a store whose holds
// cannot expire on their own) it has no deadline and only guards against
// baton's death.
func (m *Main) startGuard(expiry func() time.Time) (*guard, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot start the watchdog: %v", err)
	}
	return m.startGuardCmd(exec.Command(exe, "watchdog"), expiry)
}

// startGuardCmd is startGuard with the watchdog's command given.
func (m *Main) startGuardCmd(wd *exec.Cmd, expiry func() time.Time) (*guard, error) {
	var err error
	g := &guard{ready: make(chan struct{}), fired: make(chan struct{}), gone: make(chan struct{}), stopPush: make(chan struct{})}
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
			case "fired":
				close(g.fired)
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
// tick, not at the next move.)
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
		if e := expiry(); !e.Equal(last) {
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

// hasFired reports whether the watchdog stopped the group at its deadline.
func (g *guard) hasFired() bool {
	select {
	case <-g.fired:
		return true
	default:
		return false
	}
}

// watchdog is the hidden `baton watchdog`: it leads the process group CMD
// runs in and SIGKILLs the group when the last deadline read from stdin
// passes or stdin closes.
func (m *Main) watchdog(_ context.Context, args []string) error {
	if len(args) != 0 {
		return usageErr("watchdog: no arguments (started by baton itself)")
	}
	// Signals meant for CMD reach the whole group; only SIGKILL (or the
	// deadline) may end the watchdog.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPIPE)
	// A watchdog that wakes late eats into the margin before the store
	// can hand the lock on; it sleeps nearly all the time, so a higher
	// priority costs the machine nothing.
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
	never := make(chan time.Time)
	var timer *time.Timer
	expired := (<-chan time.Time)(never)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return killGroup() // baton is gone
			}
			at, err := strconv.ParseInt(strings.TrimPrefix(l, "d "), 10, 64)
			if err != nil || !strings.HasPrefix(l, "d ") {
				return killGroup()
			}
			if timer != nil {
				timer.Stop()
			}
			timer = time.NewTimer(time.Duration(at - monoNow()))
			expired = timer.C
		case <-expired:
			fmt.Fprintln(m.Stdout, "fired")
			return killGroup()
		}
	}
}

// killGroup SIGKILLs the watchdog's own process group, itself included.
func killGroup() error {
	return syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
}
