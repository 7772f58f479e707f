// Package baton provides distributed coordination recipes — fair,
// herd-free locks, read/write locks, semaphores, leader election, barriers,
// double barriers and queues — written once against a small set of store
// primitives (Conn) and run on ZooKeeper (package zk), etcd (package etcd)
// and in process memory (package memory). Package redis adds single-instance
// Redis locks and Redlock with the same Lease handle.
//
// Every recipe is built on a Session. Constructors do no I/O; every
// blocking call takes a context first; errors are sentinels compared with
// errors.Is. A lock acquisition returns a Lease carrying a fencing token and
// a Done channel that closes no later than the moment another client could
// take the lock.
//
// On ZooKeeper the node layouts are Apache Curator's, on etcd those of
// etcd's concurrency package, so baton interoperates with Curator, kazoo,
// go-zookeeper and etcdctl on the same paths.
package baton
