package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/batonhq/baton/internal/supervise"
)

// runSpec says what CMD runs under.
type runSpec struct {
	lost   <-chan struct{}  // closed when the hold ends
	stop   stopSpec         // the grace, and SIGTERM to SIGKILL after a loss
	guard  bool             // run CMD under a watchdog (a hold that can be handed on)
	expiry func() time.Time // the hold's loss deadline, or nil if it has none
}

// runCmd runs argv with env added to baton's environment (less its
// secrets) under supervise.Run, passing on caught signals; with guard the
// watchdog is baton's hidden `watchdog` command. A CMD that cannot be
// started exits 126 or 127, as in a shell.
func (m *Main) runCmd(argv, env []string, sigs *signals, rs runSpec) (supervise.Result, error) {
	sp := supervise.Spec{
		Argv: argv, Env: append(cmdEnviron(os.Environ(), m.passSecrets), env...),
		Stdin: m.Stdin, Stdout: m.Stdout, Stderr: m.Stderr,
		Signals: sigs.c, Lost: rs.lost, Stop: rs.stop, Expiry: rs.expiry,
	}
	if rs.guard {
		exe, err := os.Executable()
		if err != nil {
			return supervise.Result{}, fmt.Errorf("cannot start the watchdog: %v", err)
		}
		sp.Watchdog = []string{exe, "watchdog"}
	}
	res, err := supervise.Run(sp)
	if se := (*supervise.StartError)(nil); errors.As(err, &se) {
		return res, exitWith(res.Status, err)
	}
	return res, err
}
