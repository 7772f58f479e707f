package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresNotifyRing is the contended floor of a lock built on LISTEN/NOTIFY
// with durable writes: the least one such hand-off costs on a server. The
// releaser runs one autocommit statement that writes the lock's row (a
// commit, and with the server's fsync a WAL flush) and, in the same
// statement, NOTIFYs the next waiter's own channel; the waiter, woken on
// its listening connection, reads the row once (one round trip) and holds.
// The line of waiters is kept in this process, so the ring runs no queuing
// statement and no check: a lock whose hand-off is a durable release, a
// notification and one read cannot hand off faster on the same server.
// Every locker has two connections, one that listens on its channel and
// one for its statements. It is a measuring stick for the contended
// workload, not a lock: its lockers must all live in one process.
type PostgresNotifyRing struct {
	// URL is a libpq connection URL (postgres://…).
	URL string
	// AsyncCommit sets synchronous_commit off on the statements'
	// connections: the release returns, and its NOTIFY is delivered,
	// without waiting for the WAL flush. It separates the flush from the
	// notification's delivery (a NOTIFY alone still commits with a flush).
	AsyncCommit bool

	ring  lines[relayLine[*pgRingLocker]]
	mu    sync.Mutex
	n     int
	table bool // made: the clients open at once, and CREATE TABLE IF NOT EXISTS races
}

// notifyRingTable holds one row per lock name, the counter its releases
// increment, in the connection's default schema.
const notifyRingTable = "baton_bench_notify_ring"

// Open makes the ring's table if it is missing, once per ring; the
// connections are the lockers' own.
func (f *PostgresNotifyRing) Open(ctx context.Context) (Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.table {
		c, err := pgx.Connect(ctx, f.URL)
		if err != nil {
			return nil, err
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+notifyRingTable+" (id text PRIMARY KEY, n bigint NOT NULL)"); err != nil {
			return nil, err
		}
		f.table = true
	}
	return &pgRingClient{f: f}, nil
}

type pgRingClient struct {
	f  *PostgresNotifyRing
	mu sync.Mutex
	ls []*pgRingLocker
}

func (c *pgRingClient) Locker(name string) Locker {
	c.f.mu.Lock()
	c.f.n++
	ch := fmt.Sprintf("baton_ring_%p_%d", c.f, c.f.n)
	c.f.mu.Unlock()
	l := &pgRingLocker{url: c.f.URL, async: c.f.AsyncCommit, r: c.f.ring.get(name), id: name, ch: ch}
	c.mu.Lock()
	c.ls = append(c.ls, l)
	c.mu.Unlock()
	return l
}

func (c *pgRingClient) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, l := range c.ls {
		errs = append(errs, l.close(ctx))
	}
	return errors.Join(errs...)
}

// pgRingLocker is told on its own channel that the lock is handed to it.
type pgRingLocker struct {
	url   string
	async bool
	r     *relayLine[*pgRingLocker]
	id    string // the lock's row
	ch    string // this locker's channel

	listen, stmt *pgx.Conn
}

// arm opens the two connections once, LISTENs and makes the lock's row.
func (l *pgRingLocker) arm(ctx context.Context) error {
	if l.stmt != nil {
		return nil
	}
	listen, err := pgx.Connect(ctx, l.url)
	if err != nil {
		return err
	}
	stmt, err := pgx.Connect(ctx, l.url)
	if err != nil {
		_ = listen.Close(ctx)
		return err
	}
	l.listen, l.stmt = listen, stmt
	if _, err := listen.Exec(ctx, "LISTEN "+pgx.Identifier{l.ch}.Sanitize()); err != nil {
		return err
	}
	if l.async {
		if _, err := stmt.Exec(ctx, "SET synchronous_commit = off"); err != nil {
			return err
		}
	}
	_, err = stmt.Exec(ctx, "INSERT INTO "+notifyRingTable+" (id, n) VALUES ($1, 0) ON CONFLICT (id) DO NOTHING", l.id)
	return err
}

func (l *pgRingLocker) close(ctx context.Context) error {
	var errs []error
	for _, c := range []*pgx.Conn{l.listen, l.stmt} {
		if c != nil {
			errs = append(errs, c.Close(ctx))
		}
	}
	return errors.Join(errs...)
}

// Lock takes the lock at once if nobody holds it (one read, as a holder
// must make), else joins the line, waits for its turn on its channel and
// then reads the lock's row.
func (l *pgRingLocker) Lock(ctx context.Context) error {
	if err := l.arm(ctx); err != nil {
		return err
	}
	want, free := l.r.join(l)
	if !free {
		for {
			n, err := l.listen.WaitForNotification(ctx)
			if err != nil {
				return l.leave(ctx, err)
			}
			if n.Payload == want {
				break
			}
		}
	}
	var n int64
	return l.stmt.QueryRow(ctx, "SELECT n FROM "+notifyRingTable+" WHERE id = $1", l.id).Scan(&n)
}

// leave takes us out of the line after a failed wait; if we were handed
// the lock already, it passes it on.
func (l *pgRingLocker) leave(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	} else if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		// The wait timed out at ctx's deadline, maybe just before ctx's
		// own timer: report ctx's end.
		<-ctx.Done()
		err = ctx.Err()
	}
	if l.r.leave(l) {
		return err
	}
	uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(err, l.Unlock(uctx))
}

// Unlock writes the lock's row and, in the same statement, NOTIFYs the
// first in line with its turn; with nobody in line it only writes.
func (l *pgRingLocker) Unlock(ctx context.Context) error {
	next, ok := l.r.next()
	if !ok {
		_, err := l.stmt.Exec(ctx, "UPDATE "+notifyRingTable+" SET n = n + 1 WHERE id = $1", l.id)
		return err
	}
	_, err := l.stmt.Exec(ctx, "WITH u AS (UPDATE "+notifyRingTable+" SET n = n + 1 WHERE id = $1 RETURNING n) SELECT pg_notify($2, $3) FROM u",
		l.id, next.w.ch, next.turn)
	return err
}
