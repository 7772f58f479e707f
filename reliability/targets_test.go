package reliability

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/internal/etcdtest"
)

// target is one store under test.
type target struct {
	kind string        // "zk" or "etcd": how a worker process opens it
	addr string        // the server's host:port
	ttl  time.Duration // session TTL used by every scenario
}

var pathSeq atomic.Int64

func (tg target) path() string {
	return fmt.Sprintf("/reliability/%s-%d-%d", tg.kind, time.Now().UnixNano(), pathSeq.Add(1))
}

// openStore opens a session on kind at addr; both the tests and the worker
// processes use it.
func openStore(ctx context.Context, kind, addr string, ttl time.Duration) (*baton.Session, error) {
	switch kind {
	case "etcd":
		return etcd.Open(ctx, []string{"http://" + addr}, etcd.WithTTL(ttl))
	default:
		return openOther(ctx, kind, addr, ttl)
	}
}

// open opens a session on the target through addr (the server's own
// address or a proxy's) and closes it when the test ends.
func (tg target) open(t testing.TB, addr string) *baton.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := openStore(ctx, tg.kind, addr, tg.ttl)
	if err != nil {
		t.Fatalf("open %s at %s: %v", tg.kind, addr, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

func etcdTarget(t testing.TB) target {
	srv := etcdtest.Start(t)
	return target{kind: "etcd", addr: srv.Addr(), ttl: 2 * time.Second}
}

// targets returns every store the process-level scenarios run on.
func targets(t *testing.T) []target {
	return append([]target{etcdTarget(t)}, otherTargets(t)...)
}
