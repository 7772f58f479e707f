package etcd

import (
	"context"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// OwnerTTL returns the time left on the lease that owns ephemeral keys
// (owner is the lease id in hex, as baton.Node.Owner carries it): how long
// its keys outlive their owner's silence. `baton status` shows it. A
// lease that is gone is an error.
func (c *conn) OwnerTTL(ctx context.Context, owner string) (time.Duration, error) {
	id, err := strconv.ParseInt(owner, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd: owner %q is not a lease id: %w", owner, err)
	}
	resp, err := c.cli.TimeToLive(ctx, clientv3.LeaseID(id))
	if err != nil {
		return 0, err
	}
	if resp.TTL < 0 {
		return 0, fmt.Errorf("etcd: lease %s is gone", owner)
	}
	return time.Duration(resp.TTL) * time.Second, nil
}
