// Package batontest is the conformance suite every baton backend must
// pass: each recipe's contract, mutual exclusion under load, herd-freedom
// and the fault cases, written once and run against memory, ZooKeeper and
// etcd (Run, RunConn); and the suite of the baton.Locker contract
// (RunLocker), which every lock passes, the Redis locks among them.
package batontest

import (
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// Harness is how the suite drives one backend.
type Harness struct {
	// Name names the backend in test output.
	Name string
	// Open opens a new session with the given TTL (0 means the backend's
	// short test default, about a second). It registers its own cleanup.
	Open func(t testing.TB, ttl time.Duration) *baton.Session
	// Path returns a fresh, unused name for one test (a ZooKeeper path, an
	// etcd prefix).
	Path func(t testing.TB) string
	// Expire makes the server expire s's session now, as if the client had
	// gone silent for its whole TTL.
	Expire func(t testing.TB, s *baton.Session)
	// Partition cuts s off the store (both directions) until heal is
	// called. The session must then report itself lost locally before the
	// server expires it.
	Partition func(t testing.TB, s *baton.Session) (heal func())
	// DropCreateReply arranges that the next Create on s reaches the store
	// and is applied there, but its reply is lost as in a connection loss.
	DropCreateReply func(t testing.TB, s *baton.Session)
	// WatchFires, if set, returns the store-wide count of watch
	// notifications sent (e.g. read from the server); otherwise the suite
	// sums WatchCounter over its sessions.
	WatchFires func(t testing.TB) int64
	// PendingWatches, if set, returns the number of watches currently set
	// on the store (ZooKeeper's wchs). The herd test then also checks that
	// every release sends exactly one notification.
	PendingWatches func(t testing.TB) int
	// LoadScale shrinks the load tests of the recipes (the queue's 1,000
	// items, the RWMutex's cycles) for a slow store: 0 or 1 is full size,
	// 0.25 a quarter. The shape (clients, producers, consumers, the one
	// killed) stays.
	LoadScale float64
	// MaxPriority, if not zero, is the highest PriorityQueue priority the
	// store takes, the lowest being 0 (etcd's recipes layout: 0 to 99999);
	// a Put outside must fail with an error wrapping
	// baton.ErrInvalidPriority. Zero: every int32 is taken.
	MaxPriority int32
	// Parallel runs the tests beside each other (t.Parallel, up to go
	// test's -parallel), but for those that count watches across the
	// whole store, which run first, one at a time. Every test works under
	// a Path of its own, and Expire, Partition and DropCreateReply touch
	// only the session they are given; the harness's functions must be
	// safe to call from several tests at once.
	Parallel bool
}
