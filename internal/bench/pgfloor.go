package bench

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/postgres"
)

// PostgresFloor cycles a session advisory lock (postgres.AdvisoryKey of
// the name) with pgx, one connection
// per client: `SELECT pg_advisory_lock(key)` and `SELECT
// pg_advisory_unlock(key)`, two round trips. Contended, the waiters block
// inside the server and a release hands the lock over in the server's lock
// manager, without a round trip to any client: the least a lock between
// PostgreSQL clients costs, with no lease, no fencing token and no loss
// signal.
type PostgresFloor struct {
	DSN string // for pgx, without baton's schema= parameter
}

// Open connects one session.
func (f PostgresFloor) Open(ctx context.Context) (Client, error) {
	c, err := pgx.Connect(ctx, f.DSN)
	if err != nil {
		return nil, err
	}
	return &pgFloorClient{c: c}, nil
}

type pgFloorClient struct{ c *pgx.Conn }

func (c *pgFloorClient) Locker(name string) Locker {
	return &pgFloorLocker{c: c.c, key: postgres.AdvisoryKey(name)}
}

func (c *pgFloorClient) Close(ctx context.Context) error { return c.c.Close(ctx) }

type pgFloorLocker struct {
	c   *pgx.Conn
	key int64
}

func (l *pgFloorLocker) Lock(ctx context.Context) error {
	_, err := l.c.Exec(ctx, "SELECT pg_advisory_lock($1)", l.key)
	return err
}

func (l *pgFloorLocker) Unlock(ctx context.Context) error {
	_, err := l.c.Exec(ctx, "SELECT pg_advisory_unlock($1)", l.key)
	return err
}

// PostgresRowFloor cycles what a lock kept in a table costs at least, for
// the uncontended workload only: `INSERT INTO t (name) VALUES ($1)` and
// `DELETE FROM t WHERE name = $1`, each committed on its own (with the
// server's fsync, two WAL flushes a cycle, which the advisory lock never
// writes). Contended, the second INSERT fails: it is no lock.
type PostgresRowFloor struct {
	// URL is a libpq connection URL (postgres://…).
	URL string
	// AsyncCommit sets synchronous_commit off on the connection: the
	// statements commit without waiting for their WAL flush.
	AsyncCommit bool
}

// rowFloorTable is the row floor's table, in the connection's default
// schema.
const rowFloorTable = "baton_bench_row_floor"

// Open connects one client and makes the table if it is missing.
func (f PostgresRowFloor) Open(ctx context.Context) (Client, error) {
	c, err := pgx.Connect(ctx, f.URL)
	if err != nil {
		return nil, err
	}
	stmts := []string{"CREATE TABLE IF NOT EXISTS " + rowFloorTable + " (name text PRIMARY KEY)"}
	if f.AsyncCommit {
		stmts = append(stmts, "SET synchronous_commit = off")
	}
	for _, sql := range stmts {
		if _, err := c.Exec(ctx, sql); err != nil {
			_ = c.Close(ctx)
			return nil, err
		}
	}
	return &pgRowFloorClient{c: c}, nil
}

type pgRowFloorClient struct{ c *pgx.Conn }

func (c *pgRowFloorClient) Locker(name string) Locker { return &pgRowFloorLocker{c: c.c, name: name} }

func (c *pgRowFloorClient) Close(ctx context.Context) error { return c.c.Close(ctx) }

type pgRowFloorLocker struct {
	c    *pgx.Conn
	name string
}

func (l *pgRowFloorLocker) Lock(ctx context.Context) error {
	_, err := l.c.Exec(ctx, "INSERT INTO "+rowFloorTable+" (name) VALUES ($1)", l.name)
	return err
}

func (l *pgRowFloorLocker) Unlock(ctx context.Context) error {
	_, err := l.c.Exec(ctx, "DELETE FROM "+rowFloorTable+" WHERE name = $1", l.name)
	return err
}
