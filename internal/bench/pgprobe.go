package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresProbe reads pg_stat_statements (the server must preload it and
// the database have the extension): Requests is the number of statements
// the server ran, every client's, less the probe's own; ServerTime the
// time it spent running them. A statement a client pipelines with others
// counts once each, so Requests is an upper bound on round trips. With
// pg_stat_statements.track = all, Fires is the number of notifications
// sent (NOTIFY statements and pg_notify calls, inside functions too): each
// goes to one channel, which one session listens on.
type PostgresProbe struct {
	// URL is a libpq connection URL (postgres://…).
	URL string
}

// probeQuery leaves out the probe's own reads (and pg_stat_statements'
// other readers).
const probeQuery = `SELECT coalesce(sum(calls) FILTER (WHERE toplevel), 0)::bigint,
	coalesce(sum(total_exec_time) FILTER (WHERE toplevel), 0)::float8,
	coalesce(sum(calls) FILTER (WHERE query ILIKE '%pg_notify(%' OR query ILIKE 'NOTIFY %'), 0)::bigint,
	current_setting('pg_stat_statements.track') = 'all'
FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'`

// Sample reads the server's counters once.
func (p PostgresProbe) Sample(ctx context.Context) (Counters, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c, err := pgx.Connect(ctx, p.URL)
	if err != nil {
		return Counters{}, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	var calls, notifies int64
	var ms float64
	var all bool
	if err := c.QueryRow(ctx, probeQuery).Scan(&calls, &ms, &notifies, &all); err != nil {
		return Counters{}, fmt.Errorf("bench: pg_stat_statements: %w", err)
	}
	return Counters{Requests: calls, ServerTime: time.Duration(ms * float64(time.Millisecond)), HasServerTime: true,
		Fires: notifies, HasFires: all}, nil
}
