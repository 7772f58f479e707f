package main

import (
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// runHeld is the end of lock, elect and semaphore: with a CMD it runs it
// under a watchdog while l lasts (exit 76 if l is lost, or in jeopardy as
// stop's grace says; CMD's status otherwise); without one it prints env
// and holds until a signal. what names the hold in messages ("lock
// NAME"); expiry is the hold's loss deadline (nil if it has none). A
// revocation request on l (a lock taken with --on-revoke term) stops CMD
// as a loss does, or ends the hold, and baton exits with CMD's status (0
// without CMD) once the caller released.
func (m *Main) runHeld(sigs *signals, l *baton.Lease, expiry func() time.Time, what string, env, argv []string, stop stopSpec) error {
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
	res, err := m.runCmd(argv, env, sigs, runSpec{lost: ended, stop: stop, guard: true, expiry: expiry})
	if err != nil {
		return err
	}
	switch {
	case res.guardDied:
		return exitWith(exitFailure, fmt.Errorf("%s: the watchdog process was killed; CMD stopped", what))
	case res.lost && l.Err() == nil && res.expired:
		return exitWith(exitLost, fmt.Errorf("%s lost while CMD ran (no contact with the store confirmed before the loss deadline); the watchdog killed CMD", what))
	case res.jeopardy && l.Err() == nil:
		return exitWith(exitLost, fmt.Errorf("%s in jeopardy while CMD ran (no contact with the store confirmed until --grace %v before the loss deadline); CMD stopped, giving the hold up", what, stop.grace))
	case res.lost && l.Err() == nil:
		return exitWith(res.status, fmt.Errorf("%s revoked on request while CMD ran; CMD stopped, releasing", what))
	case res.lost:
		return exitWith(exitLost, fmt.Errorf("%s lost while CMD ran (%v); CMD stopped", what, l.Err()))
	}
	return exitWith(res.status, nil)
}

// sessionExpiry is the loss deadline of s's session, or nil.
func sessionExpiry(s *baton.Session) func() time.Time {
	if e, ok := s.Conn().(backend.Expirer); ok {
		return e.Expiry
	}
	return nil
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
