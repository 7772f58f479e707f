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
