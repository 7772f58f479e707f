package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/batonhq/baton"
)

// signals catches SIGINT, SIGTERM and SIGHUP for the whole command, so
// that baton decides what they mean: cancel a wait, release a hold, or pass
// them on to CMD.
type signals struct {
	c chan os.Signal
}

func catchSignals() *signals {
	s := &signals{c: make(chan os.Signal, 8)}
	signal.Notify(s.c, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	return s
}

// stop stops catching: the default actions apply again.
func (s *signals) stop() { signal.Stop(s.c) }

// cancelling returns a copy of ctx that the next caught signal cancels,
// and its cancel, which the caller must call.
func (s *signals) cancelling(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.c:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// requeue puts a signal back for the next reader.
func (s *signals) requeue(sig os.Signal) {
	select {
	case s.c <- sig:
	default:
	}
}

// sigStatus is the shell's exit status for death by sig.
func sigStatus(sig os.Signal) int {
	if n, ok := sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return exitFailure
}

// errTimeout marks a wait that ran out of --timeout.
var errTimeout = errors.New("timed out")

// waitFor runs get under a ctx that a caught signal or the timeout (if
// positive) cancels. A signal makes it return the signal's exit status; a
// timeout wraps errTimeout with exit status 75. A signal that arrives just
// after get succeeded is put back for the caller.
func waitFor[T any](ctx context.Context, sigs *signals, timeout time.Duration, get func(context.Context) (T, error)) (T, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if timeout > 0 {
		var c2 context.CancelFunc
		wctx, c2 = context.WithTimeout(wctx, timeout)
		defer c2()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := get(wctx)
		ch <- result{v, err}
	}()
	var sig os.Signal
	for {
		select {
		case r := <-ch:
			switch {
			case r.err == nil:
				if sig != nil {
					sigs.requeue(sig)
				}
				return r.v, nil
			case sig != nil:
				return r.v, exitWith(sigStatus(sig), nil)
			case timeout > 0 && ctx.Err() == nil && errors.Is(r.err, context.DeadlineExceeded):
				return r.v, exitWith(exitTimeout, timedOut(timeout, r.err))
			}
			return r.v, r.err
		case s := <-sigs.c:
			if sig == nil {
				sig = s
				cancel()
			}
		}
	}
}

// waitForFree is waitFor whose timeout spares what is free: with a
// positive timeout it first runs try (which answers at once, taking what is
// free) unbounded by the timeout, and waits with wait, bounded, only if try
// says baton.ErrLocked. So --timeout bounds the wait behind holders, never
// the round trips that take a free lock: --timeout 1ns takes a free one.
func waitForFree[T any](ctx context.Context, sigs *signals, timeout time.Duration, try, wait func(context.Context) (T, error)) (T, error) {
	if timeout > 0 {
		v, err := waitFor(ctx, sigs, 0, try)
		if !errors.Is(err, baton.ErrLocked) {
			return v, err
		}
	}
	return waitFor(ctx, sigs, timeout, wait)
}

// childResult says how CMD ended.
type childResult struct {
	status int  // CMD's exit status (128+n for a signal)
	lost   bool // the hold ended while CMD ran and CMD was stopped
	// expired: the watchdog stopped CMD at the hold's loss deadline (baton
	// had not confirmed contact with the store in time).
	expired bool
	// guardDied: the watchdog died on its own (killed from outside), so
	// baton stopped CMD.
	guardDied bool
	// stopped: a SIGINT or SIGTERM was passed on to CMD (baton is asked
	// to stop, not to go on).
	stopped bool
	// jeopardy: the watchdog sent CMD SIGTERM --grace before the loss
	// deadline (no contact with the store confirmed until then); the
	// hold is given up.
	jeopardy bool
}

// runSpec says what CMD runs under.
type runSpec struct {
	lost   <-chan struct{}  // closed when the hold ends
	stop   stopSpec         // the grace, and SIGTERM to SIGKILL after a loss
	guard  bool             // run CMD under a watchdog (a hold that can be handed on)
	expiry func() time.Time // the hold's loss deadline, or nil if it has none
}

// runCmd runs argv in its own process group with env added, passing on
// caught signals to the group. If lost closes first, the group gets
// SIGTERM, then SIGKILL after stop.killAfter. With guard, the group is the
// watchdog's (see watchdog.go), which also sends SIGTERM stop.grace before
// the loss deadline and SIGKILL at it, and which sends the SIGTERM and
// SIGKILL of a loss. It returns once CMD has exited; nothing is left of
// the group then.
func (m *Main) runCmd(argv, env []string, sigs *signals, rs runSpec) (childResult, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = m.Stdin, m.Stdout, m.Stderr
	cmd.Env = append(cmdEnviron(os.Environ(), m.passSecrets), env...)
	// Own group so baton can signal CMD and everything it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
	var g *guard
	if rs.guard {
		var err error
		if g, err = m.startGuard(rs.expiry, rs.stop); err != nil {
			return childResult{}, err
		}
		cmd.SysProcAttr.Pgid = g.pgid
	}
	// On a terminal baton runs in the foreground of, CMD takes the
	// foreground (so it can read the terminal and gets ^C itself), and
	// baton takes it back when CMD is gone.
	if fd, ok := foregroundTTY(m.Stdin); ok {
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, fd
		defer takeForeground(fd)
	}
	if err := cmd.Start(); err != nil {
		if g != nil {
			g.finish()
		}
		code := cannotRun(err)
		return childResult{status: code}, exitWith(code, fmt.Errorf("cannot run %s: %v", argv[0], err))
	}
	pgid := cmd.Process.Pid
	var gone <-chan struct{}
	if g != nil {
		pgid = g.pgid
		gone = g.gone
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var res childResult
	var kill <-chan time.Time
	lost := rs.lost
	stops := 0      // SIGINTs and SIGTERMs passed on
	killed := false // baton SIGKILLed the group (and so the watchdog)
	for {
		select {
		case err := <-done:
			if g != nil {
				g.finish()
				if g.hasFired() {
					res.lost, res.expired = true, true
				}
				res.jeopardy = g.hasTermed()
			} else if res.lost {
				// Nothing in the group may outlive the hold.
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			res.status = exitStatus(cmd.ProcessState, err)
			return res, nil
		case s := <-sigs.c:
			sig := s.(syscall.Signal)
			if sig == syscall.SIGINT || sig == syscall.SIGTERM {
				res.stopped = true
				// A second ^C or SIGTERM means now: SIGKILL the group.
				if stops++; stops > 1 {
					sig, killed = syscall.SIGKILL, true
				}
			}
			_ = syscall.Kill(-pgid, sig)
		case <-gone:
			// The watchdog is dead: it fired (and killed the group), or
			// it was killed, and then CMD is unguarded.
			gone = nil
			if !g.hasFired() && !g.hasKilled() && !killed {
				res.guardDied = true
			}
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		case <-lost:
			lost = nil
			res.lost = true
			// The watchdog sends the SIGTERM (unless its grace sent one
			// already: CMD is told once) and the SIGKILL, even if baton is
			// stopped from now on; baton does only if it cannot.
			if g != nil && g.stopGroup(rs.stop.killAfter) == nil {
				continue
			}
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			t := time.NewTimer(rs.stop.killAfter)
			defer t.Stop()
			kill = t.C
		case <-kill:
			killed = true
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
}

func exitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		return exitFailure
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
