package bench

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
)

// PostgresFloor cycles pg_advisory_lock + pg_advisory_unlock on the lock
// name's hash (hashtextextended), each holder on a connection of its own:
// the lock PostgreSQL hands off inside the server, which no lease-based
// lock can beat.
type PostgresFloor struct {
	DSN string // for pgx, without baton's schema= parameter
}

// Open returns a client whose holders dial their connections on first
// use.
func (f PostgresFloor) Open(context.Context) (Client, error) {
	return &pgFloorClient{dsn: f.DSN}, nil
}

type pgFloorClient struct {
	dsn   string
	mu    sync.Mutex
	conns []*pgx.Conn
}

func (c *pgFloorClient) Locker(name string) Locker { return &pgFloorLocker{c: c, name: name} }

func (c *pgFloorClient) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	for _, db := range c.conns {
		if cerr := db.Close(ctx); err == nil {
			err = cerr
		}
	}
	c.conns = nil
	return err
}

type pgFloorLocker struct {
	c    *pgFloorClient
	name string
	db   *pgx.Conn
}

func (l *pgFloorLocker) Lock(ctx context.Context) error {
	if l.db == nil {
		db, err := pgx.Connect(ctx, l.c.dsn)
		if err != nil {
			return err
		}
		l.c.mu.Lock()
		l.c.conns = append(l.c.conns, db)
		l.c.mu.Unlock()
		l.db = db
	}
	_, err := l.db.Exec(ctx, "SELECT pg_advisory_lock(hashtextextended($1, 0))", l.name)
	return err
}

func (l *pgFloorLocker) Unlock(ctx context.Context) error {
	_, err := l.db.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", l.name)
	return err
}
