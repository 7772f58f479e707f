package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/store"
	"github.com/batonhq/baton/postgres"
)

// exitNotHeld is `status --held`'s status when nobody holds NAME.
const exitNotHeld = 3

// statusReport is `baton status --json`'s output: the layout reader's
// report, with the store it was read from.
type statusReport struct {
	Store string `json:"store"`
	Held  bool   `json:"held"`
	layout.Report
	// Other is NAME's other spelling where it is another lock and holds
	// something (status_spelling.go).
	Other *otherSpelling `json:"other_spelling,omitempty"`
	// Advisory is, on PostgreSQL, NAME's advisory lock where a session
	// holds or waits for it (status_advisory.go).
	Advisory *advisoryLock `json:"advisory_lock,omitempty"`
}

// status is `baton status [flags] [--json] [--held] [--watch] NAME`.
func (m *Main) status(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("status", "status [--store URL] [--json] [--held | --watch] NAME\n\n"+
		"Shows who holds NAME and who waits, for every recipe (locks, read/write locks, semaphores,\n"+
		"elections, barriers, queues) and for the peers sharing its layout (Curator, kazoo,\n"+
		"go-zookeeper, etcdctl): role, identity (host, pid, command), age, TTL left, token, and\n"+
		"warnings where a peer's layout does not mix with baton's (docs/interop.md).\n\n"+
		"Exit status: 0; with --held 0 if someone holds NAME (a lock or read/write holder, a leader,\n"+
		"a semaphore lease), 3 if nobody does; 1 if the store cannot be read; 2 for bad usage.", &sf, false)
	asJSON := fs.Bool("json", false, "print one JSON object (with --watch, one per change)")
	held := fs.Bool("held", false, "print nothing; exit 0 if NAME is held, 3 if not")
	watch := fs.Bool("watch", false, "redraw whenever NAME changes, until interrupted")
	name, _, err := nameArgs(fs, &sf, args)
	if err != nil {
		return err
	}
	if *held && *watch {
		return usageErr("status: --held and --watch do not mix")
	}
	u, err := sf.parse()
	if err != nil {
		return err
	}
	in := store.Inspect(u, sf.options(), func(ctx context.Context) (*store.Store, error) { return m.open(ctx, &sf) })
	defer closeInspector(in)
	if _, err := in.Connect(ctx); err != nil {
		return badTLS(err)
	}
	var src statusSource = &nameSource{u: u, name: name, r: in.Name(name), in: in}
	if *watch {
		src = &reconnecting{m: m, in: in, src: src, name: name, retry: defaultRetry}
		return m.watchStatus(ctx, src, *asJSON)
	}
	rep, err := src.read(ctx)
	if err != nil {
		return err
	}
	switch {
	case *held && !*asJSON:
	case *asJSON:
		if err := json.NewEncoder(m.Stdout).Encode(rep); err != nil {
			return err
		}
	default:
		printStatus(m.Stdout, rep)
	}
	if *held && !rep.Held {
		return exitWith(exitNotHeld, nil)
	}
	return nil
}

// watchStatus prints the report, then again after every change, until
// ctx ends or a signal arrives.
func (m *Main) watchStatus(ctx context.Context, src statusSource, asJSON bool) error {
	sigs := catchSignals()
	defer sigs.stop()
	ctx, cancel := sigs.cancelling(ctx)
	defer cancel()
	tty := isTerminal(m.Stdout)
	var last string
	for {
		rep, err := src.read(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		var b strings.Builder
		if asJSON {
			_ = json.NewEncoder(&b).Encode(rep)
		} else {
			printStatus(&b, rep)
		}
		if out := b.String(); out != last {
			last = out
			if tty && !asJSON {
				fmt.Fprint(m.Stdout, "\033[H\033[2J")
			} else if !asJSON {
				fmt.Fprintf(m.Stdout, "-- %s\n", time.Now().Format(time.TimeOnly))
			}
			fmt.Fprint(m.Stdout, out)
		}
		if err := src.wait(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// statusSource reads a name's report and waits for it to change.
type statusSource interface {
	read(ctx context.Context) (statusReport, error)
	wait(ctx context.Context) error
}

// nameSource is a name's status, read by the store's inspector: its
// report and what its other spelling holds.
type nameSource struct {
	u    store.URL
	name string
	r    store.NameReader
	in   store.Inspector // its session's Conn reads the advisory lock
	adv  *advisoryLock   // as read last
}

func (r *nameSource) read(ctx context.Context) (statusReport, error) {
	rep, err := r.r.Read(ctx)
	if err != nil {
		return statusReport{}, badTLS(err)
	}
	r.adv = nil
	if c, err := r.in.Conn(ctx); err == nil {
		adv, warn := readAdvisory(ctx, c, r.name)
		if warn != "" {
			rep.Warnings = append(rep.Warnings, warn)
		}
		r.adv = adv
	}
	return statusReport{Store: r.u.String(), Held: rep.Held(), Report: rep, Other: otherOf(ctx, r.r), Advisory: r.adv}, nil
}

// wait waits for the name to change, and on PostgreSQL for its advisory
// lock to change hands too, whichever comes first.
func (r *nameSource) wait(ctx context.Context) error {
	c, err := r.in.Conn(ctx)
	if _, ok := c.(postgres.AdvisoryReader); err != nil || !ok {
		return r.r.Wait(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	adv := r.adv // read goes on writing r.adv once this returns
	done := make(chan error, 2)
	go func() { done <- r.r.Wait(ctx) }()
	go func() { done <- waitAdvisory(ctx, c, r.name, adv) }()
	err = <-done
	cancel()
	<-done // neither outlives the wait
	return err
}

// badTLS makes err a usage error if TLS files did not load.
func badTLS(err error) error {
	var ee *exitError
	if errors.Is(err, store.ErrBadTLS) && !errors.As(err, &ee) {
		return usageErr("%v", err)
	}
	return err
}

// closeInspector closes what in opened, bounded.
func closeInspector(in store.Inspector) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	in.Close(ctx)
}
