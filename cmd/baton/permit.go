package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton"
)

// permitHeld is `baton semaphore --permit-ttl D`: CMD runs holding an
// expiring permit; its expiry (or release by id) stops CMD like a loss.
func (m *Main) permitHeld(ctx context.Context, sigs *signals, s *baton.Session, name string, n int, ttl, timeout time.Duration, stop stopSpec, argv []string) error {
	sem := baton.NewPermitSemaphore(s, name, n)
	p, err := waitFor(ctx, sigs, timeout, func(ctx context.Context) (*baton.Permit, error) { return sem.Acquire(ctx, ttl) })
	if err != nil {
		if isTimeout(err) {
			return exitWith(exitTimeout, fmt.Errorf("semaphore %s: not acquired within %v", name, timeout))
		}
		return wrapExit(err, "semaphore %s", name)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_ = sem.Release(ctx, p)
	}()
	env := []string{"BATON_SEMAPHORE=" + name, "BATON_PERMIT=" + p.ID, "BATON_TOKEN=" + strconv.FormatInt(p.Lease.Token(), 10)}
	return m.runHeld(sigs, p.Lease, "permit "+p.ID+" of "+name, env, argv, stop)
}

// permitLine is one permit in `baton permit list --json`.
type permitLine struct {
	ID      string    `json:"id"`
	TTLms   int64     `json:"ttl_ms,omitempty"`
	Set     time.Time `json:"set,omitzero"`
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Waiting bool      `json:"waiting,omitempty"`
}

// permit is `baton permit list [-n N] [--json] NAME`, `baton permit extend
// NAME ID D` and `baton permit release NAME ID`: the permits of a
// PermitSemaphore, from any process.
func (m *Main) permit(ctx context.Context, args []string) error {
	v, args, err := m.verb("permit", args, "list", "extend", "release")
	if err != nil {
		return err
	}
	var sf storeFlags
	fs := m.newFlags("permit "+v, map[string]string{
		"list":    "permit list [--store URL] [-n N] [--json] NAME",
		"extend":  "permit extend [--store URL] NAME ID D   (the permit lasts at least D from now)",
		"release": "permit release [--store URL] NAME ID",
	}[v], &sf, false)
	n := fs.Int("n", 0, "list: the semaphore's N, to mark the leases still waiting")
	asJSON := fs.Bool("json", false, "list: a JSON array")
	pos, rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	pos = append(pos, rest...)
	want := map[string]int{"list": 1, "extend": 3, "release": 2}[v]
	if len(pos) != want {
		return usageErr("permit %s: want %d arguments, got %d (see baton permit %s -h)", v, want, len(pos), v)
	}
	name := pos[0]
	if err := checkName(name); err != nil {
		return err
	}
	var ttl time.Duration
	if v == "extend" {
		if ttl, err = time.ParseDuration(pos[2]); err != nil || ttl <= 0 {
			return usageErr("permit extend: %q is no positive duration", pos[2])
		}
	}
	sf.name = name
	sigs, s, done, err := m.openVerb(ctx, &sf, "permit")
	if err != nil {
		return err
	}
	defer done()
	sem := baton.NewPermitSemaphore(s.Session, name, *n)
	var act func(ctx context.Context) error
	switch v {
	case "extend":
		act = func(ctx context.Context) error { return sem.Extend(ctx, pos[1], ttl) }
	case "release":
		act = func(ctx context.Context) error { return sem.ReleaseID(ctx, pos[1]) }
	}
	if act != nil {
		_, err := waitFor(ctx, sigs, sf.dial, func(ctx context.Context) (struct{}, error) { return struct{}{}, act(ctx) })
		if errors.Is(err, baton.ErrInvalidName) {
			// The name was checked already: the id is malformed (the
			// library alone knows its syntax, NAME@TOKEN).
			return usageErr("permit %s %s: %v (want an ID as permit list prints it)", v, name, err)
		}
		if err != nil {
			return wrapExit(err, "permit %s %s %s", v, name, pos[1])
		}
		return nil
	}
	ps, err := waitFor(ctx, sigs, sf.dial, sem.Permits)
	if err != nil {
		return wrapExit(err, "permit list %s", name)
	}
	if *asJSON {
		lines := make([]permitLine, 0, len(ps))
		for _, p := range ps {
			lines = append(lines, permitLine{ID: p.ID, TTLms: p.TTL.Milliseconds(), Set: p.Set, Host: p.Holder.Host, PID: p.Holder.PID, Waiting: p.Waiting})
		}
		b, err := json.Marshal(lines)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(m.Stdout, "%s\n", b)
		return err
	}
	for _, p := range ps {
		ttl := "-"
		if p.TTL > 0 {
			ttl = p.TTL.String()
		}
		state := "held"
		if p.Waiting {
			state = "waiting"
		}
		if _, err := fmt.Fprintf(m.Stdout, "%s\t%s\t%s\t%s/%d\n", p.ID, ttl, state, p.Holder.Host, p.Holder.PID); err != nil {
			return err
		}
	}
	return nil
}
