// Package baton provides distributed coordination recipes — fair,
// herd-free locks, read/write locks, semaphores, leader election, barriers,
// double barriers, queues, counters and group membership — that run on
// ZooKeeper (package zk), etcd (package etcd) and an in-process store
// (package memory). Package redis adds single-server Redis locks and
// Redlock behind the same Locker and Lease.
//
// # Sessions
//
// Every recipe is built on a Session, which a backend opens: zk.Open,
// etcd.Open or memory's Store.Open. Each takes its package's options, and
// every package spells the common ones alike: WithTTL (how long a holder
// that goes silent keeps its locks; the session's on zk, etcd and memory,
// each lock's on Redis, which has no sessions) and WithTelemetry (report
// to a Telemetry). The session's nodes live exactly as long as it does;
// Done closes when it is lost.
//
// # Locks
//
// Constructors do no I/O (NewMutex(s, name)); every blocking call takes a
// context first; errors are sentinels compared with errors.Is. Lock
// returns a Lease: its Token is the fencing token to hand to the resource,
// its Done closes no later than the moment another client could take the
// lock, and Context turns it into a ctx for the work. Locker is the one
// lock contract: Mutex, RWMutex (and its RLocker), MultiLock, redis.Mutex
// and redis.Redlock meet it.
//
// A Mutex value is one lock as a sync.Mutex is: goroutines sharing it take
// turns, and a second Lock waits for Unlock. The Reentrant option makes it
// count nested Locks of one holder instead.
//
// # Elections
//
// Election and LeaderSelector both choose one leader, and with Run take
// turns leading; they differ in the layout of their nodes, and so cannot
// share a name. Use Election (Curator's LeaderLatch layout; Campaign,
// Proclaim, Resign) unless peers on the name use the lock layout
// (Curator's LeaderSelector, kazoo's Election): then LeaderSelector.
//
// # Backends
//
// A backend is a Conn of package backend, the store primitives the
// recipes are written against, as database/sql's drivers implement
// database/sql/driver. NewSession wraps one, as sql.OpenDB wraps a
// driver.Connector: a backend's Open calls it. A user of the recipes
// neither implements nor calls package backend; it only meets its Node,
// the description of a node that Election.Leader, LeaderEvent and a few
// others return. On ZooKeeper the node layouts are Apache
// Curator's, on etcd those of etcd's concurrency package, so baton
// interoperates with Curator, kazoo, go-zookeeper and etcdctl on the same
// names.
package baton
