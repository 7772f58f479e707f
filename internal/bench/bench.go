// Package bench measures lock implementations on a coordination store: the
// workloads behind `baton bench` and the peer comparison in bench/.
//
// A workload runs against a Target: a Factory that opens clients of one lock
// implementation (baton, a peer library, or the floor: the raw client
// operations one lock cycle needs) and a Probe that reads the store's own
// counters, so that server requests and watch notifications are counted the
// same way for every implementation.
package bench

import (
	"context"
	"time"
)

// Factory opens clients of one lock implementation on one store.
type Factory interface {
	// Open opens one client with its own session or connection.
	Open(ctx context.Context) (Client, error)
}

// Client is one session; the lock handles taken from it share it.
type Client interface {
	// Locker returns a new handle on the lock name: one holder.
	Locker(name string) Locker
	// Close ends the session, releasing what it holds.
	Close(ctx context.Context) error
}

// Locker is one holder of one lock.
type Locker interface {
	// Lock acquires the lock, waiting as long as ctx allows. A Locker whose
	// library takes no ctx may ignore it and wait for its turn.
	Lock(ctx context.Context) error
	// Unlock releases it.
	Unlock(ctx context.Context) error
}

// WatchCounter is an optional Client capability: the watch notifications
// the session has received (baton.WatchCounter on the session's Conn).
type WatchCounter interface {
	WatchEvents() int64
}

// Contenders is an optional Client capability: how many contenders (the
// holder and its waiters) are queued on the lock name. The herd workload
// uses it to know when every waiter is in line.
type Contenders interface {
	Contenders(ctx context.Context, name string) (int, error)
}

// Counters are a store's own cumulative counters at one moment.
type Counters struct {
	// Requests is the number of client requests the servers received
	// (on Redis: the commands they ran, those inside scripts included).
	Requests int64
	// RoundTrips is the number of requests clients sent, a script
	// counting once; valid only when HasRoundTrips (Redis).
	RoundTrips    int64
	HasRoundTrips bool
	// Fires is the number of watch notifications the servers sent; valid
	// only when HasFires.
	Fires    int64
	HasFires bool
	// Watches is the number of watches currently set on the servers; valid
	// only when HasWatches.
	Watches    int64
	HasWatches bool
	// ServerTime is the time the servers spent running statements; valid
	// only when HasServerTime (PostgreSQL's pg_stat_statements).
	ServerTime    time.Duration
	HasServerTime bool
}

// Probe reads a store's counters (ZooKeeper mntr, etcd /metrics, Redis
// INFO). Its own reads must not count as requests.
type Probe interface {
	Sample(ctx context.Context) (Counters, error)
}

// Target is one implementation on one store.
type Target struct {
	// Impl names the lock implementation ("baton", "go-zookeeper", "floor", …).
	Impl string
	// Store names the store ("zk", "etcd", "redis", "redlock5", "memory", …).
	Store string
	// Factory opens its clients.
	Factory Factory
	// Probe reads the store's counters; nil if the store has none.
	Probe Probe
}

// Config says what to run.
type Config struct {
	// Workload is uncontended, contended, herd, many, floor or footprint.
	// (floor is uncontended run on a floor Target.)
	Workload string
	// Clients is the number of contending sessions (contended, many) or
	// waiters (herd, footprint).
	Clients int
	// Locks is the number of independent locks (many).
	Locks int
	// Duration is how long a timed workload runs.
	Duration time.Duration
	// Name is the lock name or name prefix; a fresh unique one if empty.
	Name string
	// Hold is how long each acquisition is held before its release
	// (uncontended, floor, contended); zero releases at once.
	Hold time.Duration
	// Rounds is how many interleaved rounds the telemetry workload runs
	// (at least 3; 15 if zero).
	Rounds int
}

// Workloads lists the workload names Run accepts.
// "gateway" is contended on etcd's own lock over its HTTP gateway
// (GatewayTarget). The telemetry workload is run by TelemetryCost, not Run.
var Workloads = []string{"uncontended", "contended", "herd", "many", "floor", "footprint", "gateway", "telemetry"}
