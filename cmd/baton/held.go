package main

import (
	"fmt"
	"time"

	"github.com/batonhq/baton"
)

// runHeld is the end of lock, elect and semaphore: with a CMD it runs it
// under a watchdog while l lasts (exit 76 if l is lost, CMD's status
// otherwise); without one it prints env and holds until a signal. what
// names the hold in messages ("lock NAME"); expiry is the hold's loss
// deadline (nil if it has none).
func (m *Main) runHeld(sigs *signals, l *baton.Lease, expiry func() time.Time, what string, env, argv []string, killAfter time.Duration) error {
	if argv == nil {
		return m.holdUntilSignal(sigs, l, what, env)
	}
	res, err := m.runCmd(argv, env, sigs, runSpec{lost: l.Done(), killAfter: killAfter, guard: true, expiry: expiry})
	if err != nil {
		return err
	}
	switch {
	case res.guardDied:
		return exitWith(exitFailure, fmt.Errorf("%s: the watchdog process was killed; CMD stopped", what))
	case res.lost && l.Err() == nil && res.expired:
		return exitWith(exitLost, fmt.Errorf("%s lost while CMD ran (no contact with the store confirmed before the loss deadline); the watchdog killed CMD", what))
	case res.lost:
		return exitWith(exitLost, fmt.Errorf("%s lost while CMD ran (%v); CMD stopped", what, l.Err()))
	}
	return exitWith(res.status, nil)
}

// sessionExpiry is the loss deadline of s's session, or nil.
func sessionExpiry(s *baton.Session) func() time.Time {
	if e, ok := s.Conn().(baton.Expirer); ok {
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
	}
}
