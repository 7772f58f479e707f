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
	var src statusSource
	if !u.HasSessions() {
		src = &redisSource{u: u, name: name, o: sf.options()}
	} else {
		s, err := m.open(ctx, &sf)
		if err != nil {
			return err
		}
		defer closeStore(s)
		src = &sessionSource{s: s, name: name, dial: sf.dial}
	}
	if *watch {
		if ss, ok := src.(*sessionSource); ok {
			r := &reconnecting{m: m, sf: &sf, src: ss, retry: defaultRetry}
			defer r.close()
			src = r
		}
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

// sessionSource reads ZooKeeper and etcd through the layout reader.
type sessionSource struct {
	s    *store.Store
	name string
	dial time.Duration
	last layout.Listing
}

func (r *sessionSource) kind() string { return r.s.URL.Layout() }

func (r *sessionSource) read(ctx context.Context) (statusReport, error) {
	lctx, cancel := context.WithTimeout(ctx, r.dial+10*time.Second)
	defer cancel()
	l, err := layout.Read(lctx, r.s.Session.Conn(), r.kind(), r.name)
	if err != nil {
		return statusReport{}, fmt.Errorf("status %s: %w", r.name, err)
	}
	r.last = l
	rep := layout.Describe(l, time.Now())
	return statusReport{Store: r.s.URL.String(), Held: rep.Held(), Report: rep, Other: r.otherOf(lctx)}, nil
}

// wait returns once any directory read last differs, or the name itself
// appears or goes, watched with the store's own watches. It also returns
// after a minute, so ages and TTLs are refreshed now and then.
func (r *sessionSource) wait(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c := r.s.Session.Conn()
	changed := make(chan error, 16)
	watch := func(f func() error) {
		go func() { changed <- f() }()
	}
	dirs := []string{"", layout.DirLocks, layout.DirLeases, layout.DirClaims}
	if r.kind() == layout.StoreZooKeeper {
		dirs = append(dirs, layout.DirEntries, layout.DirTaken)
	}
	for _, d := range dirs {
		path := r.name
		if d != "" {
			path = strings.TrimSuffix(r.name, "/") + "/" + d
		}
		since := nodesOf(r.last.Dirs[d])
		watch(func() error { return c.WaitChildren(ctx, path, since) })
	}
	if r.kind() == layout.StoreZooKeeper {
		since := nodesOf(r.last.Dirs[layout.DirKazooLock])
		watch(func() error { return c.WaitChildren(ctx, r.name+layout.DirKazooLock, since) })
	}
	if !r.last.Exists {
		watch(func() error { _, err := c.WaitExists(ctx, r.name); return err })
	}
	err := <-changed
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return nil // the periodic refresh
	}
	return err
}

// redisSource reads a Redis or Redlock lock on every server.
type redisSource struct {
	u    store.URL
	name string
	o    store.Options
	last string
	// once: the other spelling is read by the first read only (the wait
	// display), and kept in other.
	once      bool
	other     *otherSpelling
	otherRead bool
}

func (r *redisSource) read(ctx context.Context) (statusReport, error) {
	locks, err := store.InspectRedis(ctx, r.u, r.name, r.o)
	if errors.Is(err, store.ErrBadTLS) {
		return statusReport{}, usageErr("%v", err)
	}
	if err != nil {
		return statusReport{}, err
	}
	rep := describeRedis(r.name, r.u, locks, time.Now())
	b, _ := json.Marshal(rep)
	r.last = string(b)
	if !r.once || !r.otherRead {
		r.other, r.otherRead = r.otherOf(ctx), true
	}
	rep.Other = r.other
	return rep, nil
}

// wait polls: Redis keeps no watches a reader could use without taking
// part in the lock's hand-off.
func (r *redisSource) wait(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		locks, err := store.InspectRedis(ctx, r.u, r.name, r.o)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(describeRedis(r.name, r.u, locks, time.Now()))
		if !sameRedis(string(b), r.last) {
			return nil
		}
	}
}

// sameRedis compares two reports without the TTLs and ages, which
// change with the clock.
func sameRedis(a, b string) bool {
	var x, y statusReport
	_ = json.Unmarshal([]byte(a), &x)
	_ = json.Unmarshal([]byte(b), &y)
	for i := range x.Entries {
		x.Entries[i].TTL, x.Entries[i].Age = 0, 0
	}
	for i := range y.Entries {
		y.Entries[i].TTL, y.Entries[i].Age = 0, 0
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
