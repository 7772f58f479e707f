package zk

import (
	"fmt"
	"strings"

	"github.com/batonhq/baton/backend"
)

var _ backend.Peers = (*conn)(nil)

// ForeignCandidate finds a lock-layout candidate (Curator's "…-lock-<seq>",
// kazoo's "…__lock__<seq>"): Curator's LeaderSelector and kazoo's Election
// order only their own lock nodes and ignore "latch-" ones, so they would
// lead at the same time as a LeaderLatch or baton leader.
func (c *conn) ForeignCandidate(kids []backend.Node) string {
	for _, k := range kids {
		if k.Kind == backend.KindLock && (strings.Contains(k.Name, "-lock-") || strings.Contains(k.Name, "__lock__")) {
			return fmt.Sprintf("a lock-layout candidate %s (Curator's LeaderSelector or kazoo's Election)", k.Name)
		}
	}
	return ""
}

// ForeignSemaphoreLease finds a kazoo Semaphore lease: kazoo keeps its
// leases as NAME/<uuid hex> and counts every child of NAME as one, while
// baton and Curator keep theirs under NAME/leases, so neither side would
// see the other's leases.
func (c *conn) ForeignSemaphoreLease(kids []backend.Node) string {
	for _, k := range kids {
		if isHex(k.Name, 32) {
			return fmt.Sprintf("a kazoo Semaphore lease (%s); kazoo's semaphore and baton's do not see each other's leases", k.Name)
		}
	}
	return ""
}

// isHex reports whether s is n lowercase hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}
