package main

import (
	"github.com/batonhq/baton/internal/bench"
)

// startPostgres starts one PostgreSQL server. The floor is a session
// advisory lock (pg_advisory_lock/pg_advisory_unlock, the hand-off inside
// the server; bench.Targets), the peer cirello.io/pglock's algorithm with
// its defaults (pglock.go). The contended rounds also run the notify ring
// (bench.PostgresNotifyRing), the physical limit of a LISTEN/NOTIFY lock,
// and the wake ring (bench.PostgresWakeRing), that of any lock whose
// hand-off writes a row.
func (r *rig) startPostgres(base string, fsync bool) error {
	if err := r.add(startPostgres(base, fsync)); err != nil {
		return err
	}
	url := pgURL(r.servers[0].addr)
	if err := r.parse(url); err != nil {
		return err
	}
	_, floor, err := bench.Targets(r.url, storeOptions)
	if err != nil {
		return err
	}
	floor.Store = r.st
	probe := bench.PostgresProbe{URL: url}
	r.peer = bench.Target{Impl: "pglock-style", Factory: pglockFactory{url}, Probe: probe}
	// The least a lock kept in a table costs uncontended: one row
	// inserted and deleted, each committed.
	// The same with synchronous_commit off: the least it costs without
	// the WAL flushes.
	r.cycleFloors = []bench.Target{{Impl: rowFloor, Store: r.st, Factory: bench.PostgresRowFloor{URL: url}, Probe: probe},
		{Impl: rowFloorAsync, Store: r.st, Factory: bench.PostgresRowFloor{URL: url, AsyncCommit: true}, Probe: probe}}
	// The contended rounds run the advisory lock too: 8 sessions blocked
	// in pg_advisory_lock, the server handing it on; and the notify ring,
	// the least a hand-off by a durable write and a NOTIFY costs.
	ring := bench.Target{Impl: notifyRing, Store: r.st, Factory: &bench.PostgresNotifyRing{URL: url}, Probe: probe}
	// The same ring with synchronous_commit off: the release without
	// waiting for its WAL flush.
	async := bench.Target{Impl: notifyRingAsync, Store: r.st, Factory: &bench.PostgresNotifyRing{URL: url, AsyncCommit: true}, Probe: probe}
	// And the wake ring: waiters woken by the server's lock manager, no
	// notification, the release a row written and committed (durably,
	// and not).
	wake := bench.Target{Impl: wakeRing, Store: r.st, Factory: &bench.PostgresWakeRing{URL: url}, Probe: probe}
	wakeAsync := bench.Target{Impl: wakeRingAsync, Store: r.st, Factory: &bench.PostgresWakeRing{URL: url, AsyncCommit: true}, Probe: probe}
	r.handOffFloors = []bench.Target{floor, ring, async, wake, wakeAsync}
	r.herd, r.herdBatonOnly = true, true
	return nil
}
