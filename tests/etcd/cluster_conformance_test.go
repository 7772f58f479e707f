package etcd_test

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestConformanceServeCluster runs the whole conformance suite against a
// three-member cluster of `baton serve` processes, every session talking
// to a follower (its writes forwarded to the leader through raft).
//
// All sessions use the same member because the suite checks, from one
// session, what another has just done (a node gone after a cancelled
// Lock, a permit free after a Release), and this package's reads (Children,
// Get) are serializable: consistent for the session that reads, but a
// member other than the one a write went through may answer from just
// before it. Spread over the three members, Semaphore/TryAcquire then
// fails now and then with ErrLocked right after another session's
// Release. Mutual exclusion does not rest on these reads (every
// acquisition is a compare in a raft transaction); the reliability suite
// runs contenders spread over all three members.
func TestConformanceServeCluster(t *testing.T) {
	c := etcdtest.StartServeCluster(t, 3)
	f := (c.Leader(30*time.Second) + 1) % len(c.Members)
	batontest.Run(t, harnessOn(t, "etcd-serve×3", c.Endpoints()[f:f+1], clientv3.Config{}))
}
