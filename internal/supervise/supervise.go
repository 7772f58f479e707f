package supervise

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Spec says what CMD is and what it runs under.
type Spec struct {
	Argv   []string // CMD and its arguments
	Env    []string // CMD's whole environment
	Stdin  *os.File // also the terminal CMD takes the foreground of, if it is ours
	Stdout io.Writer
	Stderr io.Writer // CMD's, and the watchdog's

	// Signals are the signals the caller catches; each is passed on to
	// CMD's group, and a second SIGINT or SIGTERM as SIGKILL.
	Signals <-chan os.Signal
	// Lost closes when the hold ends (nil: never): CMD's group gets
	// SIGTERM, then SIGKILL Stop.KillAfter later.
	Lost <-chan struct{}
	Stop Stop
	// Watchdog is the command that runs Watchdog in a process of its own
	// (the program and its first arguments; Run adds the Stop's), for a
	// hold that can be handed on; nil: no watchdog.
	Watchdog []string
	// Expiry is the hold's loss deadline as of now (the zero Time once the
	// hold has ended), or nil for a hold that cannot expire on its own:
	// the watchdog then only guards against the supervisor's death.
	Expiry func() time.Time
}

// Result says how CMD ended.
type Result struct {
	Status int  // CMD's exit status (128+n for a signal)
	Lost   bool // the hold ended while CMD ran and CMD was stopped
	// Expired: the watchdog stopped CMD at the hold's loss deadline (no
	// contact with the store was confirmed in time).
	Expired bool
	// WatchdogDied: the watchdog died on its own (killed from outside),
	// so Run stopped CMD.
	WatchdogDied bool
	// Stopped: a SIGINT or SIGTERM was passed on to CMD (the caller is
	// asked to stop, not to go on).
	Stopped bool
	// Jeopardy: the watchdog sent CMD SIGTERM Stop.Grace before the loss
	// deadline (no contact with the store confirmed until then); the
	// hold is to be given up.
	Jeopardy bool
}

// StartError is a CMD that could not be started.
type StartError struct {
	Name string // argv[0]
	Err  error
}

func (e *StartError) Error() string { return fmt.Sprintf("cannot run %s: %v", e.Name, e.Err) }

func (e *StartError) Unwrap() error { return e.Err }

// CannotRunStatus is the shell's exit status for a CMD that could not be
// started with err: 127 if it was not found, 126 if it was found but
// cannot be run.
func CannotRunStatus(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return 127
	}
	return 126
}

// Run runs CMD in its own process group, passing on caught signals to the
// group. If Lost closes first, the group gets SIGTERM, then SIGKILL after
// Stop.KillAfter. With a Watchdog, the group is the watchdog's, which also
// sends SIGTERM Stop.Grace before the loss deadline and SIGKILL at it,
// and which sends the SIGTERM and SIGKILL of a loss. Run returns once CMD
// has exited; nothing is left of the group then. A CMD that cannot be
// started is a *StartError, with Result.Status the shell's status for it.
func Run(sp Spec) (Result, error) {
	cmd := exec.Command(sp.Argv[0], sp.Argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sp.Stdin, sp.Stdout, sp.Stderr
	cmd.Env = sp.Env
	// Own group so that CMD and everything it started can be signalled.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
	var g *guard
	if sp.Watchdog != nil {
		var err error
		wd := exec.Command(sp.Watchdog[0], append(sp.Watchdog[1:], sp.Stop.args()...)...)
		if g, err = startGuard(wd, sp.Stderr, sp.Expiry); err != nil {
			return Result{}, err
		}
		cmd.SysProcAttr.Pgid = g.pgid
	}
	// On a terminal the caller runs in the foreground of, CMD takes the
	// foreground (so it can read the terminal and gets ^C itself), and
	// the caller takes it back when CMD is gone.
	if fd, ok := foregroundTTY(sp.Stdin); ok {
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, fd
		defer takeForeground(fd)
	}
	if err := cmd.Start(); err != nil {
		if g != nil {
			g.finish()
		}
		return Result{Status: CannotRunStatus(err)}, &StartError{Name: sp.Argv[0], Err: err}
	}
	r := &run{sp: sp, cmd: cmd, g: g, pgid: cmd.Process.Pid, lost: sp.Lost, done: make(chan error, 1)}
	if g != nil {
		r.pgid, r.gone = g.pgid, g.gone
	}
	go func() { r.done <- cmd.Wait() }()
	return r.wait(), nil
}

// run is one CMD from its start to its end.
type run struct {
	sp   Spec
	cmd  *exec.Cmd
	g    *guard // nil without a watchdog
	pgid int    // CMD's group: the watchdog's, or CMD's own

	done   chan error       // CMD's Wait
	gone   <-chan struct{}  // the watchdog died; nil once seen
	lost   <-chan struct{}  // the hold ended; nil once seen
	kill   <-chan time.Time // the SIGKILL after a loss, if Run sends it
	res    Result
	stops  int  // SIGINTs and SIGTERMs passed on
	killed bool // Run SIGKILLed the group (and so the watchdog)
}

// wait handles what happens until CMD exits.
func (r *run) wait() Result {
	for {
		select {
		case <-r.done:
			return r.exited()
		case s := <-r.sp.Signals:
			r.passOn(s.(syscall.Signal))
		case <-r.gone:
			// The watchdog is dead: it fired (and killed the group), or
			// it was killed, and then CMD is unguarded.
			r.gone = nil
			if !r.g.hasFired() && !r.g.hasKilled() && !r.killed {
				r.res.WatchdogDied = true
			}
			_ = syscall.Kill(-r.pgid, syscall.SIGKILL)
		case <-r.lost:
			r.lost = nil
			r.res.Lost = true
			r.stopGroup()
		case <-r.kill:
			r.killed = true
			_ = syscall.Kill(-r.pgid, syscall.SIGKILL)
		}
	}
}

// passOn sends a caught signal to the group; a second SIGINT or SIGTERM
// means now: SIGKILL.
func (r *run) passOn(sig syscall.Signal) {
	if sig == syscall.SIGINT || sig == syscall.SIGTERM {
		r.res.Stopped = true
		if r.stops++; r.stops > 1 {
			sig, r.killed = syscall.SIGKILL, true
		}
	}
	_ = syscall.Kill(-r.pgid, sig)
}

// stopGroup stops the group of a hold that ended. The watchdog sends the
// SIGTERM (unless its grace sent one already: CMD is told once) and the
// SIGKILL, even if the supervisor is stopped from now on; Run does only
// if it cannot.
func (r *run) stopGroup() {
	if r.g != nil && r.g.stopGroup(r.sp.Stop.KillAfter) == nil {
		return
	}
	_ = syscall.Kill(-r.pgid, syscall.SIGTERM)
	r.kill = time.After(r.sp.Stop.KillAfter)
}

// exited ends the run once CMD exited (its Wait's error is in its
// ProcessState).
func (r *run) exited() Result {
	if r.g != nil {
		r.g.finish()
		if r.g.hasFired() {
			r.res.Lost, r.res.Expired = true, true
		}
		r.res.Jeopardy = r.g.hasTermed()
	} else if r.res.Lost {
		// Nothing in the group may outlive the hold.
		_ = syscall.Kill(-r.pgid, syscall.SIGKILL)
	}
	r.res.Status = exitStatus(r.cmd.ProcessState)
	return r.res
}

// exitStatus is the shell's status for a process that ended as ps says.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
