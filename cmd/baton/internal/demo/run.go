package demo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/store"
)

// Run is one `baton demo`: the store, the worker processes (baton's
// hidden `worker` command) and their event logs.
type Run struct {
	Out     io.Writer      // where the demo tells its story
	Exe     string         // the baton executable the workers run
	Dir     string         // for the event logs
	TTL     time.Duration  // the workers' session TTL
	Prefix  string         // the names the demo uses are under it
	Store   store.URL      // the workers' store
	TLS     store.TLSFiles // and its TLS files
	Session *baton.Session // the demo's own session on Store

	mu    sync.Mutex
	procs []*proc
}

// Play runs the four phases, lock, election, barrier and queue, with
// workers lock contenders of rounds acquisitions each, and returns what
// they found (for Summary).
func (d *Run) Play(ctx context.Context, workers, rounds int) (*Findings, error) {
	sum := &Findings{}
	for _, phase := range []func(context.Context, *Findings) error{
		func(ctx context.Context, sum *Findings) error { return d.lockPhase(ctx, sum, workers, rounds) },
		d.electPhase, d.barrierPhase, d.queuePhase,
	} {
		if err := phase(ctx, sum); err != nil {
			return nil, err
		}
	}
	return sum, nil
}

// proc is one worker process.
type proc struct {
	id     string
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

// event is one line of a worker log.
type event struct {
	at    time.Time
	id    string
	event string
	arg   string
}

// spawn starts `baton worker ROLE` as worker id, logging to log.
func (d *Run) spawn(role, id, name, log string, extra ...string) (*proc, error) {
	args := append([]string{"worker", role, "--ttl", d.TTL.String(),
		"--name", name, "--id", id, "--log", log}, extra...)
	p := &proc{id: id, done: make(chan struct{})}
	p.cmd = exec.Command(d.Exe, args...)
	// The store goes through the environment: its password must not show
	// in the process list.
	p.cmd.Env = append(os.Environ(), "BATON_STORE="+d.Store.Unredacted(),
		"BATON_TLS_CA="+d.TLS.CA, "BATON_TLS_CERT="+d.TLS.Cert, "BATON_TLS_KEY="+d.TLS.Key)
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker %s: %w", id, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	d.mu.Lock()
	d.procs = append(d.procs, p)
	d.mu.Unlock()
	return p, nil
}

// spawnN starts n workers w1…wn; args(i) adds per-worker flags.
func (d *Run) spawnN(n int, role, name, log string, args func(i int) []string) ([]*proc, error) {
	var ps []*proc
	for i := 1; i <= n; i++ {
		var extra []string
		if args != nil {
			extra = args(i)
		}
		p, err := d.spawn(role, "w"+strconv.Itoa(i), name, log, extra...)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// wait waits for the workers to exit successfully, giving up at ctx's end
// or after limit.
func (d *Run) wait(ctx context.Context, ps []*proc, limit time.Duration) error {
	t := time.NewTimer(limit)
	defer t.Stop()
	for _, p := range ps {
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return fmt.Errorf("worker %s still running after %v", p.id, limit)
		}
		if p.err != nil {
			return fmt.Errorf("worker %s: %v: %s", p.id, p.err, strings.TrimSpace(p.stderr.String()))
		}
	}
	return nil
}

// KillAll kills every worker still running and reaps it.
func (d *Run) KillAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.procs {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// logPath names a phase's event log.
func (d *Run) logPath(phase string) string { return filepath.Join(d.Dir, phase+".log") }

// events reads a log in file order, which is the order the events
// happened in.
func readEvents(path string) ([]event, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var evs []event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 4)
		if len(parts) != 4 {
			continue // a line still being written
		}
		ns, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			continue
		}
		evs = append(evs, event{at: time.Unix(0, ns), id: parts[1], event: parts[2], arg: parts[3]})
	}
	return evs, sc.Err()
}

// waitEvent polls a log until pred matches an event, and returns it.
// Each poll first calls the reset functions given.
func waitEvent(ctx context.Context, path string, limit time.Duration, pred func(event) bool, reset ...func()) (event, error) {
	deadline := time.Now().Add(limit)
	for {
		for _, r := range reset {
			r()
		}
		evs, err := readEvents(path)
		if err != nil {
			return event{}, err
		}
		for _, e := range evs {
			if pred(e) {
				return e, nil
			}
		}
		if time.Now().After(deadline) {
			return event{}, fmt.Errorf("no such event in %v", limit)
		}
		select {
		case <-ctx.Done():
			return event{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitCount polls a log until it has n events of kind.
func waitCount(ctx context.Context, path string, limit time.Duration, kind string, n int) error {
	seen := 0
	_, err := waitEvent(ctx, path, limit, func(e event) bool {
		if e.event == kind {
			seen++
		}
		return seen == n
	}, func() { seen = 0 })
	return err
}

// progress prints how many events of kind the log has, every so often,
// until stop is closed: at most every 250 ms, and only after a tenth of
// total more (so at most nine lines, however long the run).
func (d *Run) progress(path, kind, unit string, total int, stop <-chan struct{}) {
	last := 0
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		evs, _ := readEvents(path)
		n := 0
		for _, e := range evs {
			if e.event == kind {
				n++
			}
		}
		if progressDue(n, last, total) {
			fmt.Fprintf(d.Out, "    … %d/%d %s\n", n, total, unit)
			last = n
		}
	}
}

// progressDue reports whether a count of n of total, last printed at
// last (0: never), is worth a progress line: short of the end, and a
// tenth of total (at least one) past the last.
func progressDue(n, last, total int) bool {
	return n > 0 && n < total && n-last >= max(total/10, 1)
}

// watchEvents sums the workers' reported watch notifications (less those
// before their "watch-base" mark); ok is false
// when the store does not count them.
func watchEvents(evs []event) (n int64, ok bool) {
	for _, e := range evs {
		v, _ := strconv.ParseInt(e.arg, 10, 64)
		switch e.event {
		case "watch-events":
			n += v
			ok = true
		case "watch-base":
			n -= v
		}
	}
	return n, ok
}

// kill sends sig to a worker.
func (p *proc) kill(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }
