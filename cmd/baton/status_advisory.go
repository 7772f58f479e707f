package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/postgres"
)

// advisoryLock is, on PostgreSQL, the session advisory lock that goes
// with NAME (postgres.AdvisoryKey) where a session holds or waits for
// it: a lock of its own, beside baton's (docs/postgres.md).
type advisoryLock struct {
	// Key is the lock's key, pg_advisory_lock's argument.
	Key int64 `json:"key"`
	// Sessions hold it (granted) or wait for it, holders first.
	Sessions []postgres.AdvisoryHolder `json:"sessions"`
}

// advisoryPoll is how often `status --watch` looks for a change of the
// advisory lock, which no notification announces.
const advisoryPoll = time.Second

// readAdvisory reads name's advisory lock on a PostgreSQL session's
// connection: nil on another store or where nobody holds or waits for
// it; a failed read is a warning.
func readAdvisory(ctx context.Context, c backend.Conn, name string) (*advisoryLock, string) {
	ar, ok := c.(postgres.AdvisoryReader)
	if !ok {
		return nil, ""
	}
	hs, err := ar.AdvisoryHolders(ctx, name)
	if err != nil {
		return nil, fmt.Sprintf("the advisory lock could not be read: %v", err)
	}
	if len(hs) == 0 {
		return nil, ""
	}
	return &advisoryLock{Key: postgres.AdvisoryKey(name), Sessions: hs}, ""
}

// waitAdvisory returns once name's advisory lock differs from last, or
// with ctx's error; it blocks for ever on another store.
func waitAdvisory(ctx context.Context, c backend.Conn, name string, last *advisoryLock) error {
	if _, ok := c.(postgres.AdvisoryReader); !ok {
		<-ctx.Done()
		return ctx.Err()
	}
	t := time.NewTicker(advisoryPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		now, warn := readAdvisory(ctx, c, name)
		if warn != "" || !sameAdvisory(now, last) {
			return nil
		}
	}
}

// sameAdvisory compares who holds and waits, in order.
func sameAdvisory(a, b *advisoryLock) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.EqualFunc(a.Sessions, b.Sessions, func(x, y postgres.AdvisoryHolder) bool {
		return x.PID == y.PID && x.Granted == y.Granted && x.Mode == y.Mode
	})
}

// printAdvisory prints the advisory lock's sessions.
func printAdvisory(w io.Writer, a *advisoryLock, now time.Time) {
	if a == nil {
		return
	}
	held := 0
	for _, s := range a.Sessions {
		if s.Granted {
			held++
		}
	}
	fmt.Fprintf(w, "  advisory lock %d (pg_advisory_lock, another lock than baton's): %d holding, %d waiting\n", a.Key, held, len(a.Sessions)-held)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "    PID\tSTATE\tMODE\tAPPLICATION\tCLIENT\tUSER\tCONNECTED")
	for _, s := range a.Sessions {
		state := "waiting"
		if s.Granted {
			state = "holding"
		}
		conn := "-"
		if !s.BackendStart.IsZero() {
			conn = age(max(now.Sub(s.BackendStart), 0)) + " ago"
		}
		fmt.Fprintf(tw, "    %d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.PID, state, s.Mode, orDash(s.Application), orDash(s.ClientAddr), orDash(s.User), conn)
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
