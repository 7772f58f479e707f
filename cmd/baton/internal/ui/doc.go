// Package ui is `baton ui`'s page: a live view of every recipe instance
// under a prefix (ZooKeeper and etcd through their watches, Redis through
// keyspace notifications or a re-read), its contention charts and, with
// an admin token, the deletion of a holder's, waiter's or queue item's
// node, written to an audit log.
package ui

import "time"

// closeTimeout bounds the close of the page's session.
const closeTimeout = 5 * time.Second
