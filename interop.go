package baton

import (
	"context"
	"fmt"
	"strings"

	"github.com/batonhq/baton/backend"
)

// Peers whose layouts cannot share a name with baton's recipes are refused
// loudly (ErrIncompatible) where the recipe can see them; docs/interop.md
// lists every combination.

// checkSemaphoreLayout refuses a semaphore name that holds kazoo
// Semaphore leases: kazoo keeps its leases as NAME/<uuid hex> and counts
// every child of NAME as one, while baton and Curator keep theirs under
// NAME/leases. Neither side would see the other's leases.
func checkSemaphoreLayout(ctx context.Context, c backend.Conn, name string) error {
	kids, err := c.Children(ctx, name)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if isHex(k.Name, 32) {
			return fmt.Errorf("%w: %s holds a kazoo Semaphore lease (%s); kazoo's semaphore and baton's do not see each other's leases: use one of them per name", ErrIncompatible, name, k.Name)
		}
	}
	return nil
}

// checkElectionLayout refuses to campaign beside a lock-layout candidate
// on ZooKeeper (Curator's "…-lock-<seq>", kazoo's "…__lock__<seq>"):
// Curator's LeaderSelector and kazoo's Election order only their own lock
// nodes and ignore "latch-" ones, so they would lead at the same time as
// a LeaderLatch or baton leader. (etcd's election keys are bare lease ids
// and mix correctly.)
func checkElectionLayout(name string, kids []backend.Node) error {
	for _, k := range kids {
		if k.Kind == backend.KindLock && (strings.Contains(k.Name, "-lock-") || strings.Contains(k.Name, "__lock__")) {
			return fmt.Errorf("%w: %s has a lock-layout candidate %s (Curator's LeaderSelector or kazoo's Election), which would lead beside a LeaderLatch or baton leader", ErrIncompatible, name, k.Name)
		}
	}
	return nil
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
