package supervise

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrUsage is Watchdog's error for arguments other than those Run gives.
var ErrUsage = errors.New("supervise: watchdog: [--grace G] [--kill-after K] only")

// Watchdog is the body of the watchdog process: args are those Run adds
// to Spec.Watchdog (--grace G --kill-after K), in is the pipe from the
// supervisor, out the pipe to it. It leads the process group CMD runs
// in, SIGTERMs the group G before the last deadline read from in, and
// SIGKILLs it, itself included, when that deadline passes, K after the
// SIGTERM, or when in closes (see the package doc). It returns only if it
// cannot kill its group, or with ErrUsage at its start.
func Watchdog(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("watchdog", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	grace := fs.Duration("grace", 0, "")
	killAfter := fs.Duration("kill-after", 10*time.Second, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		return ErrUsage
	}
	// Signals meant for CMD reach the whole group; only SIGKILL (or the
	// deadline) may end the watchdog.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPIPE)
	// A watchdog that wakes late eats into the grace and into the margin
	// before the store can hand the lock on; it sleeps nearly all the
	// time, so a higher priority costs the machine nothing.
	raisePriority()
	fmt.Fprintln(out, "ready")
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(in)
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
			// Said first: CMD may exit on the signal, and the supervisor
			// then kills the group, this process included.
			fmt.Fprintln(out, "term")
			_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGTERM)
			continue
		case actFire:
			fmt.Fprintln(out, "fired")
			return killGroup()
		case actKill:
			fmt.Fprintln(out, "killed")
			return killGroup()
		}
		timer.Stop()
		if next != 0 {
			timer.Reset(time.Duration(next - monoNow()))
		}
		select {
		case l, ok := <-lines:
			if !ok || !w.read(l) {
				return killGroup() // the supervisor is gone, or mad
			}
		case <-timer.C:
		}
	}
}

// killGroup SIGKILLs the watchdog's own process group, itself included.
func killGroup() error {
	return syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
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

// read takes one line from the supervisor, and reports false for a line
// that is not one of the protocol's.
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
// only when the supervisor says something).
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
		// has only KillAfter to finish.
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
