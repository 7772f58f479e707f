package baton

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/backend"
)

// Peers whose layouts cannot share a name with baton's recipes are refused
// loudly (ErrIncompatible) where the recipe can see them; the backend that
// speaks their dialects recognises their nodes (backend.Peers), and
// docs/interop.md lists every combination.

// checkSemaphoreLayout refuses a semaphore name that holds a peer's
// leases in a layout that baton's semaphore does not count (kazoo's).
func checkSemaphoreLayout(ctx context.Context, c backend.Conn, name string) error {
	p, ok := c.(backend.Peers)
	if !ok {
		return nil
	}
	kids, err := c.Children(ctx, name)
	if err != nil {
		return err
	}
	if who := p.ForeignSemaphoreLease(kids); who != "" {
		return fmt.Errorf("%w: %s holds %s: use one of them per name", ErrIncompatible, name, who)
	}
	return nil
}

// checkElectionLayout refuses to campaign beside a candidate that orders
// only lock nodes (Curator's LeaderSelector, kazoo's Election) and would
// lead beside a LeaderLatch or baton leader. (etcd's election keys are bare
// lease ids and mix correctly.)
func checkElectionLayout(c backend.Conn, name string, kids []backend.Node) error {
	p, ok := c.(backend.Peers)
	if !ok {
		return nil
	}
	if who := p.ForeignCandidate(kids); who != "" {
		return fmt.Errorf("%w: %s has %s, which would lead beside a LeaderLatch or baton leader", ErrIncompatible, name, who)
	}
	return nil
}
