package postgres

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AdvisoryKey is the key of the session advisory lock that goes with the
// lock name: the first 64 bits of the MD5 digest of name, as written (the
// same bytes baton is given: "jobs/x" and "/jobs/x" are two keys),
// read as a big-endian signed integer. In SQL:
//
//	SELECT ('x' || substr(md5('jobs/x'), 1, 16))::bit(64)::bigint;
//	SELECT pg_advisory_lock(('x' || substr(md5('jobs/x'), 1, 16))::bit(64)::bigint);
//
// baton does not take this advisory lock: `baton status NAME` shows who
// holds or waits for it, so that a baton lock and a pg_advisory_lock
// guarding the same job under the same name can be seen side by side
// (docs/postgres.md).
func AdvisoryKey(name string) int64 {
	sum := md5.Sum([]byte(name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// AdvisoryKeySQL is the SQL expression of AdvisoryKey for the text
// parameter $1.
const AdvisoryKeySQL = `('x' || substr(md5($1), 1, 16))::bit(64)::bigint`

// AdvisoryHolder is one session holding or waiting for an advisory lock,
// from pg_locks joined with pg_stat_activity. Without the
// pg_read_all_stats role the server hides the activity of other users'
// sessions: their fields other than PID, Mode and Granted are empty.
type AdvisoryHolder struct {
	// PID is the server process of the session.
	PID int32 `json:"pid"`
	// Mode is ExclusiveLock (pg_advisory_lock) or ShareLock
	// (pg_advisory_lock_shared).
	Mode string `json:"mode"`
	// Granted is true for a holder, false for a session waiting.
	Granted bool `json:"granted"`
	// User, Application and ClientAddr name the session's user, its
	// application_name and its client's address ("" over a unix socket).
	User        string `json:"user,omitempty"`
	Application string `json:"application_name,omitempty"`
	ClientAddr  string `json:"client_addr,omitempty"`
	// BackendStart is when the session connected.
	BackendStart time.Time `json:"backend_start,omitzero"`
}

// Querier runs a query: a *pgx.Conn, a *pgxpool.Pool or a pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// advisoryQuery lists the sessions holding (first) or waiting for the
// advisory lock on a 64-bit key in the current database: pg_locks keeps
// such a key's high half in classid, its low half in objid, and 1 in
// objsubid (2 is a pair of 32-bit keys).
const advisoryQuery = `SELECT l.pid, l.mode, l.granted, coalesce(a.usename::text, ''),
	coalesce(a.application_name, ''), coalesce(host(a.client_addr), ''), a.backend_start
FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.objsubid = 1
	AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND l.classid::int8 = $1 AND l.objid::int8 = $2
ORDER BY l.granted DESC, a.backend_start, l.pid`

// AdvisoryHolders returns the sessions holding or waiting for the advisory
// lock AdvisoryKey(name) in q's database, holders first.
func AdvisoryHolders(ctx context.Context, q Querier, name string) ([]AdvisoryHolder, error) {
	k := uint64(AdvisoryKey(name))
	rows, err := q.Query(ctx, advisoryQuery, int64(k>>32), int64(k&0xffffffff))
	if err != nil {
		return nil, fmt.Errorf("postgres: advisory lock of %q: %w", name, err)
	}
	var hs []AdvisoryHolder
	for rows.Next() {
		var h AdvisoryHolder
		var start *time.Time
		if err := rows.Scan(&h.PID, &h.Mode, &h.Granted, &h.User, &h.Application, &h.ClientAddr, &start); err != nil {
			rows.Close()
			return nil, fmt.Errorf("postgres: advisory lock of %q: %w", name, err)
		}
		if start != nil {
			h.BackendStart = *start
		}
		hs = append(hs, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: advisory lock of %q: %w", name, err)
	}
	return hs, nil
}

// AdvisoryReader is what a PostgreSQL session's Conn offers besides the
// SPI: the sessions holding or waiting for a name's advisory lock, read
// on the session's own connections (`baton status` shows them).
type AdvisoryReader interface {
	AdvisoryHolders(ctx context.Context, name string) ([]AdvisoryHolder, error)
}

var _ AdvisoryReader = (*conn)(nil)

// AdvisoryHolders is the package's AdvisoryHolders in the session's
// database.
func (c *conn) AdvisoryHolders(ctx context.Context, name string) ([]AdvisoryHolder, error) {
	return AdvisoryHolders(ctx, c.pool, name)
}
