package bench

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
)

// PostgresWakeRing is the contended floor of a lock kept in a table whose
// waiters the server wakes itself, with no notification: each waiter
// blocks inside the server on an advisory lock that its predecessor in
// line holds, as the advisory floor's waiters do, and so it is the
// fastest wake there is for a lock whose hand-off writes a row. The
// releaser runs one CALL that updates the lock's row, commits (with the
// server's fsync, a WAL flush) and then lets go of its advisory lock; the
// next waiter, woken by the server's lock manager, reads the row in a
// statement pipelined behind its wait (the same round trip), and holds.
// Against the notify ring it saves the NOTIFY, its delivery to every
// listening backend, and the read's round trip; against the advisory floor
// it adds the row's write and commit and the read.
//
// Its line is kept in this process: a locker takes a fresh advisory key of
// its own before it joins the line and waits on the key of the one ahead of
// it. Every locker has one connection. A waiter that gives up (the end of
// a run) closes its connection, which wakes the one behind it early: it is
// a measuring stick for the contended workload, not a lock.
type PostgresWakeRing struct {
	// URL is a libpq connection URL (postgres://…).
	URL string
	// AsyncCommit sets synchronous_commit off on the lockers' connections:
	// the release's commit does not wait for its WAL flush.
	AsyncCommit bool

	mu    sync.Mutex
	lines map[string]*wakeLine
	n     int64
	made  bool
}

// wakeRingTable holds one row per lock name, the counter its releases
// increment; wakeRingRelease is the release: write, commit, let go.
const (
	wakeRingTable   = "baton_bench_wake_ring"
	wakeRingRelease = "baton_bench_wake_ring_release"
)

// Open makes the ring's table and release procedure once per ring.
func (f *PostgresWakeRing) Open(ctx context.Context) (Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.made {
		c, err := pgx.Connect(ctx, f.URL)
		if err != nil {
			return nil, err
		}
		defer c.Close(ctx)
		for _, sql := range []string{
			"SELECT pg_advisory_lock(hashtext('" + wakeRingTable + "'))",
			"CREATE TABLE IF NOT EXISTS " + wakeRingTable + " (id text PRIMARY KEY, n bigint NOT NULL)",
			"CREATE OR REPLACE PROCEDURE " + wakeRingRelease + "(p_id text, p_key bigint) LANGUAGE plpgsql AS $$ BEGIN " +
				"UPDATE " + wakeRingTable + " SET n = n + 1 WHERE id = p_id; COMMIT; PERFORM pg_advisory_unlock(p_key); END $$",
		} {
			if _, err := c.Exec(ctx, sql); err != nil {
				return nil, err
			}
		}
		f.made = true
		f.lines = map[string]*wakeLine{}
	}
	return &wakeRingClient{f: f}, nil
}

// line returns the in-process line of a lock name, and a locker number.
func (f *PostgresWakeRing) line(name string) (*wakeLine, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.lines[name]
	if l == nil {
		l = &wakeLine{}
		f.lines[name] = l
	}
	f.n++
	return l, f.n
}

// wakeLine is the advisory keys of one lock's holder (first) and waiters.
type wakeLine struct {
	mu   sync.Mutex
	keys []int64
}

// join puts key at the back of the line: free if the line was empty, else
// the key of the one ahead.
func (w *wakeLine) join(key int64) (ahead int64, free bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys = append(w.keys, key)
	if len(w.keys) == 1 {
		return 0, true
	}
	return w.keys[len(w.keys)-2], false
}

// leave takes key out of the line: the holder's release, or a waiter
// giving up.
func (w *wakeLine) leave(key int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := slices.Index(w.keys, key); i >= 0 {
		w.keys = slices.Delete(w.keys, i, i+1)
	}
}

type wakeRingClient struct {
	f  *PostgresWakeRing
	mu sync.Mutex
	ls []*wakeRingLocker
}

func (c *wakeRingClient) Locker(name string) Locker {
	line, n := c.f.line(name)
	l := &wakeRingLocker{url: c.f.URL, async: c.f.AsyncCommit, line: line, id: name, base: n << 32}
	c.mu.Lock()
	c.ls = append(c.ls, l)
	c.mu.Unlock()
	return l
}

func (c *wakeRingClient) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, l := range c.ls {
		if l.c != nil {
			errs = append(errs, l.c.Close(ctx))
		}
	}
	return errors.Join(errs...)
}

type wakeRingLocker struct {
	url   string
	async bool
	line  *wakeLine
	id    string // the lock's row
	base  int64  // this locker's advisory keys are base+1, base+2, …
	gen   int64
	key   int64 // the key of the acquisition under way or held
	c     *pgx.Conn
}

// arm connects once (again after a wait given up) and makes the lock's
// row.
func (l *wakeRingLocker) arm(ctx context.Context) error {
	if l.c != nil {
		return nil
	}
	c, err := pgx.Connect(ctx, l.url)
	if err != nil {
		return err
	}
	l.c = c
	if l.async {
		if _, err := c.Exec(ctx, "SET synchronous_commit = off"); err != nil {
			return err
		}
	}
	_, err = c.Exec(ctx, "INSERT INTO "+wakeRingTable+" (id, n) VALUES ($1, 0) ON CONFLICT (id) DO NOTHING", l.id)
	return err
}

// Lock takes a fresh key of its own, joins the line, and waits inside the
// server on the key of the one ahead, its read pipelined behind the wait;
// first in line, it only reads.
func (l *wakeRingLocker) Lock(ctx context.Context) error {
	if err := l.arm(ctx); err != nil {
		return err
	}
	l.gen++
	l.key = l.base + l.gen
	if _, err := l.c.Exec(ctx, "SELECT pg_advisory_lock($1)", l.key); err != nil {
		return l.giveUp(ctx, err)
	}
	ahead, free := l.line.join(l.key)
	var n int64
	if free {
		if err := l.c.QueryRow(ctx, "SELECT n FROM "+wakeRingTable+" WHERE id = $1", l.id).Scan(&n); err != nil {
			return l.giveUp(ctx, err)
		}
		return nil
	}
	b := &pgx.Batch{}
	b.Queue("SELECT pg_advisory_xact_lock($1)", ahead)
	b.Queue("SELECT n FROM "+wakeRingTable+" WHERE id = $1", l.id).QueryRow(func(r pgx.Row) error { return r.Scan(&n) })
	if err := l.c.SendBatch(ctx, b).Close(); err != nil {
		return l.giveUp(ctx, err)
	}
	return nil
}

// giveUp leaves the line and drops the connection, which lets go of the
// locker's key (and wakes the one behind it).
func (l *wakeRingLocker) giveUp(ctx context.Context, err error) error {
	l.line.leave(l.key)
	if l.c != nil {
		_ = l.c.Close(context.WithoutCancel(ctx))
		l.c = nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Unlock leaves the line and releases: the row written and committed, then
// the key let go, in one CALL.
func (l *wakeRingLocker) Unlock(ctx context.Context) error {
	l.line.leave(l.key)
	_, err := l.c.Exec(ctx, "CALL "+wakeRingRelease+"($1, $2)", l.id, l.key)
	return err
}
