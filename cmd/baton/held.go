package main

import (
	"fmt"
	"time"

	"github.com/batonhq/baton"
)

// runHeld is the end of lock, elect and semaphore: with a CMD it runs it
// while l lasts (exit 76 if l is lost, CMD's status otherwise); without
// one it prints env and holds until a signal. what names the hold in
// messages ("lock NAME").
func (m *Main) runHeld(sigs *signals, l *baton.Lease, what string, env, argv []string, killAfter time.Duration) error {
	if argv == nil {
		return m.holdUntilSignal(sigs, l, what, env)
	}
	res, err := m.runCmd(argv, env, sigs, l.Done(), killAfter)
	if err != nil {
		return err
	}
	if res.lost {
		return exitWith(exitLost, fmt.Errorf("%s lost while CMD ran (%v); CMD stopped", what, l.Err()))
	}
	return exitWith(res.status, nil)
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
