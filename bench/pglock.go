package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/internal/bench"
)

// The PostgreSQL peer: cirello.io/pglock's algorithm with its defaults,
// written here because the library itself cannot be fetched on this
// machine. Labelled "pglock-style" in the results. One row per lock whose
// record version number (from a sequence) the holder rewrites every
// heartbeat; an acquire upserts the row where it is free or its version is
// the one the acquirer saw a lease ago, in a serializable transaction; an
// acquire that finds the lock taken notes its version and sleeps one lease
// before it tries again; a release deletes the row if its version is still
// ours.
const (
	pglockLease     = 20 * time.Second // pglock's DefaultLeaseDuration
	pglockHeartbeat = 5 * time.Second  // pglock's DefaultHeartbeatFrequency
	pglockTable     = "pglock_locks"
)

// pglockSchema is pglock's CreateTable, under a name of its own.
const pglockSchema = `CREATE TABLE IF NOT EXISTS ` + pglockTable + ` (
	name CHARACTER VARYING(255) PRIMARY KEY,
	record_version_number BIGINT,
	data BYTEA,
	owner CHARACTER VARYING(255)
);
CREATE SEQUENCE IF NOT EXISTS ` + pglockTable + `_rvn OWNED BY ` + pglockTable + `.record_version_number`

// pglockFactory opens pglock-style clients, one connection each.
type pglockFactory struct{ url string }

func (f pglockFactory) Open(ctx context.Context) (bench.Client, error) {
	c, err := pgx.Connect(ctx, f.url)
	if err != nil {
		return nil, err
	}
	// pglock needs its table created once by the user; racing creators
	// collide on the catalog, so a failure is retried after the others.
	for range 5 {
		if _, err = c.Exec(ctx, pglockSchema); err == nil {
			break
		}
	}
	if err != nil {
		_ = c.Close(ctx)
		return nil, fmt.Errorf("pglock-style: create table: %w", err)
	}
	return &pglockClient{c: c, owner: "pglock-" + uuid.NewString()}, nil
}

// pglockClient is one pglock Client: one connection, shared by its locks'
// acquires, releases and heartbeats (database/sql would give each its own
// pooled connection; one is enough for one lock at a time).
type pglockClient struct {
	mu    sync.Mutex // one statement at a time on c
	c     *pgx.Conn
	owner string
}

func (c *pglockClient) Locker(name string) bench.Locker { return &pglockLocker{c: c, name: name} }

func (c *pglockClient) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.Close(ctx)
}

type pglockLocker struct {
	c    *pglockClient
	name string
	rvn  int64 // the version we hold, or the one we saw while waiting

	stop chan struct{} // ends the heartbeat
	done chan struct{}
}

// errNotAcquired is pglock's ErrNotAcquired.
var errNotAcquired = errors.New("pglock-style: not acquired")

func (l *pglockLocker) Lock(ctx context.Context) error {
	var seen int64 // 0: acquire only a free lock
	for {
		err := l.tryAcquire(ctx, seen)
		if err == nil {
			l.stop, l.done = make(chan struct{}), make(chan struct{})
			go l.heartbeat(l.rvn)
			return nil
		}
		if !errors.Is(err, errNotAcquired) && !isSerialization(err) {
			return err
		}
		if errors.Is(err, errNotAcquired) {
			if seen, err = l.current(ctx); err != nil {
				return err
			}
			// pglock waits a whole lease before it looks again.
			t := time.NewTimer(pglockLease)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
	}
}

// tryAcquire is pglock's storeAcquire: in a serializable transaction, draw
// a new version and upsert the row where it is free or still at the
// version seen.
func (l *pglockLocker) tryAcquire(ctx context.Context, seen int64) error {
	ctx, cancel := statementCtx(ctx)
	defer cancel()
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	tx, err := l.c.c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var rvn int64
	if err := tx.QueryRow(ctx, "SELECT nextval('"+pglockTable+"_rvn')").Scan(&rvn); err != nil {
		return err
	}
	err = tx.QueryRow(ctx, `INSERT INTO `+pglockTable+` (name, record_version_number, data, owner) VALUES ($1, $2, NULL, $3)
		ON CONFLICT (name) DO UPDATE SET record_version_number = $2, owner = $3
		WHERE `+pglockTable+`.record_version_number IS NULL OR `+pglockTable+`.record_version_number = $4
		RETURNING record_version_number`, l.name, rvn, l.c.owner, seen).Scan(&rvn)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNotAcquired
	}
	if err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	l.rvn = rvn
	return nil
}

// current reads the lock's version (pglock's Get after a failed acquire).
func (l *pglockLocker) current(ctx context.Context) (int64, error) {
	ctx, cancel := statementCtx(ctx)
	defer cancel()
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	var rvn *int64
	err := l.c.c.QueryRow(ctx, "SELECT record_version_number FROM "+pglockTable+" WHERE name = $1", l.name).Scan(&rvn)
	if errors.Is(err, pgx.ErrNoRows) || rvn == nil {
		return 0, nil
	}
	return *rvn, err
}

// heartbeat rewrites the version every pglockHeartbeat while held.
func (l *pglockLocker) heartbeat(rvn int64) {
	defer close(l.done)
	t := time.NewTicker(pglockHeartbeat)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), pglockHeartbeat)
		l.c.mu.Lock()
		err := l.c.c.QueryRow(ctx, `UPDATE `+pglockTable+` SET record_version_number = nextval('`+pglockTable+`_rvn')
			WHERE name = $1 AND record_version_number = $2 RETURNING record_version_number`, l.name, rvn).Scan(&rvn)
		l.c.mu.Unlock()
		cancel()
		if err != nil {
			return // lost: pglock reports it on the next use
		}
		l.rvn = rvn
	}
}

func (l *pglockLocker) Unlock(ctx context.Context) error {
	close(l.stop)
	<-l.done
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	_, err := l.c.c.Exec(ctx, "DELETE FROM "+pglockTable+" WHERE name = $1 AND record_version_number = $2", l.name, l.rvn)
	return err
}

// statementCtx bounds one statement without the caller's cancel: pgx
// closes a connection whose query a cancel interrupts (database/sql, which
// pglock uses, would drop it from its pool and dial another), and the end
// of a timed run cancels the waits.
func statementCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// isSerialization reports a serialization failure, which pglock retries.
func isSerialization(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}
