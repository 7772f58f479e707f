package memory

import (
	"fmt"
	"strings"

	"github.com/batonhq/baton/backend"
)

var _ backend.Peers = (*conn)(nil)

// ForeignCandidate finds a lock-layout candidate, as on ZooKeeper: the
// store names nodes as Curator does (_c_<uid>-lock-<seq>), and its lock
// candidates are a LeaderSelector's, which orders only lock nodes and
// would lead beside an Election.
func (c *conn) ForeignCandidate(kids []backend.Node) string {
	for _, k := range kids {
		if k.Kind == backend.KindLock && strings.Contains(k.Name, "-lock-") {
			return fmt.Sprintf("a lock-layout candidate %s (a LeaderSelector)", k.Name)
		}
	}
	return ""
}

// ForeignSemaphoreLease is always "": no peer keeps leases here.
func (c *conn) ForeignSemaphoreLease([]backend.Node) string { return "" }
