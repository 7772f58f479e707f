package main

import (
	"context"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bench"
	"github.com/batonhq/baton/postgres"
)

// startPostgres starts one PostgreSQL server. The floor is a session
// advisory lock (pg_advisory_lock/pg_advisory_unlock, the hand-off inside
// the server), the peer cirello.io/pglock's algorithm with its defaults
// (pglock.go). Every baton client opens its own session with
// postgres.Open, its TTL the other stores' (10 s).
func (r *rig) startPostgres(base string, fsync bool) error {
	if err := r.add(startPostgres(base, fsync)); err != nil {
		return err
	}
	url := pgURL(r.servers[0].addr)
	r.rawURL = url
	probe := bench.PostgresProbe{URL: url}
	r.baton = bench.Target{Impl: "baton", Store: r.st, Probe: probe,
		Factory: bench.SessionFactory(func(ctx context.Context) (*baton.Session, error) {
			return postgres.Open(ctx, url, postgres.WithTTL(peerTTL))
		})}
	r.floor = bench.Target{Impl: "floor", Store: r.st, Factory: bench.PostgresFloor{URL: url}, Probe: probe}
	r.peer = bench.Target{Impl: "pglock-style", Factory: pglockFactory{url}, Probe: probe}
	// The contended rounds run the advisory lock too: 8 sessions blocked
	// in pg_advisory_lock, the server handing it on.
	r.handOffFloors = []bench.Target{r.floor}
	r.herd, r.herdBatonOnly = true, true
	return nil
}
