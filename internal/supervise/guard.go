package supervise

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pushEvery is how often the supervisor checks whether the loss deadline
// moved. The deadline it hands on is at most this stale, which only makes
// it earlier.
const pushEvery = 20 * time.Millisecond

// monoNow is the system's monotonic clock, shared by every process.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // CLOCK_MONOTONIC is always there
	}
	return ts.Nano()
}

// guard is the supervisor's side of a watchdog.
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

// startGuard starts the watchdog wd, its stderr to stderr, and hands it
// the loss deadline expiry says, and every move of it. With expiry nil (a
// hold that cannot expire on its own) it has no deadline and only guards
// against the supervisor's death.
func startGuard(wd *exec.Cmd, stderr io.Writer, expiry func() time.Time) (*guard, error) {
	var err error
	g := &guard{cmd: wd, ready: make(chan struct{}), termed: make(chan struct{}), fired: make(chan struct{}),
		killed: make(chan struct{}), gone: make(chan struct{}), stopPush: make(chan struct{})}
	g.cmd.Stderr = stderr
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
	go g.readReports(out)
	// CMD joins the group only once a signal sent to the group can no
	// longer end the watchdog.
	select {
	case <-g.ready:
	case <-g.gone:
		_ = g.in.Close()
		_ = g.cmd.Wait()
		return nil, errors.New("the watchdog process ended at its start")
	}
	if expiry != nil {
		// The deadline as of now, not as of before the watchdog started:
		// a process start can take a second on a loaded machine, and
		// renewals went on meanwhile. CMD starts after this, so a
		// supervisor stopped or killed from here on still finds it
		// guarded.
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

// readReports closes the channel of each report the watchdog writes, and
// gone when it writes no more.
func (g *guard) readReports(out io.Reader) {
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
// not handed on: the end reaches Run, which asks the watchdog to stop the
// group (SIGTERM, then SIGKILL Stop.KillAfter later or at the last
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
