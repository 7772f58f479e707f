package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/zktest"
	"github.com/batonhq/baton/postgres"
	"github.com/batonhq/baton/zk"
)

func openOther(ctx context.Context, kind, addr string, ttl time.Duration) (*baton.Session, error) {
	switch kind {
	case "zk":
		return zk.Open(ctx, []string{addr}, zk.WithTTL(ttl))
	case "postgres":
		return postgres.Open(ctx, pgURL(addr), postgres.WithTTL(ttl))
	}
	return nil, fmt.Errorf("reliability: unknown store kind %q", kind)
}

// otherTargets are the stores besides etcd: a real ZooKeeper (tickTime
// 100 ms, so a 1 s session) and a real PostgreSQL.
func otherTargets(t *testing.T) []target {
	srv := zktest.Start(t)
	return []target{{kind: "zk", addr: srv.Addr(), ttl: time.Second}, pgTarget(t)}
}
