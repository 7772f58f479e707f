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
// counts once each, so Requests is an upper bound on round trips.
type PostgresProbe struct {
	// URL is a libpq connection URL (postgres://…).
	URL string
}

// probeQuery leaves out the probe's own reads (and pg_stat_statements'
// other readers).
const probeQuery = `SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(total_exec_time), 0)::float8
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
	var calls int64
	var ms float64
	if err := c.QueryRow(ctx, probeQuery).Scan(&calls, &ms); err != nil {
		return Counters{}, fmt.Errorf("bench: pg_stat_statements: %w", err)
	}
	return Counters{Requests: calls, ServerTime: time.Duration(ms * float64(time.Millisecond)), HasServerTime: true}, nil
}
