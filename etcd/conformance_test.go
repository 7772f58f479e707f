package etcd

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/proxy"
)

// testTTL is the session TTL of the conformance tests: short enough for the fault tests, long enough for a loaded machine under -race.
const testTTL = 3 * time.Second

// harness drives the embedded server. Every session dials through its own
// fault proxy, so Partition can cut it alone.
func harness(t *testing.T) batontest.Harness {
	var n atomic.Int64
	var proxies sync.Map // *baton.Session → *proxy.Proxy
	admin := rawClient(t, server(t).Endpoints())
	return batontest.Harness{
		Name: "etcd",
		// The queue load tests at a quarter size (250 items) keep the
		// package within its time budget on a loaded 2-core machine.
		LoadScale: 0.25,
		Open: func(t testing.TB, ttl time.Duration) *baton.Session {
			if ttl == 0 {
				ttl = testTTL
			}
			if os.Getenv("NOPROXY") != "" {
				return openT(t, server(t).Endpoints(), WithTTL(ttl))
			}
			p := proxy.Start(t, server(t).Addr())
			s := openT(t, []string{"http://" + p.Addr()}, WithTTL(ttl))
			proxies.Store(s, p)
			return s
		},
		Path: func(testing.TB) string { return fmt.Sprintf("/baton/test-%d", n.Add(1)) },
		Expire: func(t testing.TB, s *baton.Session) {
			id, err := strconv.ParseInt(s.ID(), 16, 64)
			if err != nil {
				t.Fatalf("session id %q: %v", s.ID(), err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := admin.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
				t.Fatalf("revoke lease %s: %v", s.ID(), err)
			}
		},
		Partition: func(t testing.TB, s *baton.Session) func() {
			p, ok := proxies.Load(s)
			if !ok {
				t.Fatalf("session %s has no proxy", s.ID())
			}
			p.(*proxy.Proxy).Blackhole()
			return p.(*proxy.Proxy).Heal
		},
		DropCreateReply: func(_ testing.TB, s *baton.Session) {
			s.Conn().(*conn).dropCreateReply.Store(true)
		},
	}
}

func TestConformance(t *testing.T) {
	batontest.Run(t, harness(t))
}
