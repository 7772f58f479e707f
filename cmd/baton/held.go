package main

import (
	"fmt"
	"time"

	"github.com/batonhq/baton"
)

// runHeld is the end of lock, elect and semaphore: with a CMD it runs it
// under a watchdog while l lasts (exit 76 if l is lost, or in jeopardy as
// stop's grace says; CMD's status otherwise); without one it prints env
// and holds until a signal. what names the hold in messages ("lock
// NAME"); the watchdog gets l's loss deadline (Lease.Deadline). A
// revocation request on l (a lock taken with --on-revoke term) stops CMD
// as a loss does, or ends the hold, and baton exits with CMD's status (0
// without CMD) once the caller released.
func (m *Main) runHeld(sigs *signals, l *baton.Lease, what string, env, argv []string, stop stopSpec) error {
	if argv == nil {
		return m.holdUntilSignal(sigs, l, what, env)
	}
	ended, quit := make(chan struct{}), make(chan struct{})
	defer close(quit)
	go func() {
		select {
		case <-l.Done():
		case <-l.RevokeRequested():
		case <-quit:
			return
		}
		close(ended)
	}()
	res, err := m.runCmd(argv, env, sigs, runSpec{lost: ended, stop: stop, guard: true, expiry: deadlineOf(l)})
	if err != nil {
		return err
	}
	switch {
	case res.WatchdogDied:
		return exitWith(exitFailure, fmt.Errorf("%s: the watchdog process was killed; CMD stopped", what))
	case res.Lost && l.Err() == nil && res.Expired:
		return exitWith(exitLost, fmt.Errorf("%s lost while CMD ran (no contact with the store confirmed before the loss deadline); the watchdog killed CMD", what))
	case res.Jeopardy && l.Err() == nil:
		return exitWith(exitLost, fmt.Errorf("%s in jeopardy while CMD ran (no contact with the store confirmed until --grace %v before the loss deadline); CMD stopped, giving the hold up", what, stop.Grace))
	case res.Lost && l.Err() == nil:
		return exitWith(res.Status, fmt.Errorf("%s revoked on request while CMD ran; CMD stopped, releasing", what))
	case res.Lost:
		return exitWith(exitLost, fmt.Errorf("%s lost while CMD ran (%v); CMD stopped", what, l.Err()))
	}
	return exitWith(res.Status, nil)
}

// deadlineOf is l's loss deadline for the watchdog (Lease.Deadline), or
// nil for a lease that has none. Deadline is the zero Time only once the
// lease has ended or for a lease without one, so a zero read while l is
// held means none; a lease that ended meanwhile keeps Deadline, whose zero
// tells the watchdog it is lost already.
func deadlineOf(l *baton.Lease) func() time.Time {
	if l.Deadline().IsZero() && l.Err() == nil {
		return nil
	}
	return l.Deadline
}

// holdUntilSignal prints what is held and waits for a signal (exit 0) or
// the loss of the hold (exit 76).
func (m *Main) holdUntilSignal(sigs *signals, l *baton.Lease, what string, env []string) error {
	for i, e := range env {
		if i > 0 {
			fmt.Fprint(m.Stdout, " ")
		}
		fmt.Fprint(m.Stdout, e)
	}
	fmt.Fprintln(m.Stdout)
	select {
	case <-sigs.c:
		return nil
	case <-l.Done():
		return exitWith(exitLost, fmt.Errorf("%s lost: %v", what, l.Err()))
	case <-l.RevokeRequested():
		fmt.Fprintf(m.Stderr, "baton: %s revoked on request; releasing\n", what)
		return nil
	}
}
