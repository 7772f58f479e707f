package etcd

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
)

// testTTL is the session TTL of the conformance tests: short enough for the fault tests, long enough for a loaded machine under -race.
const testTTL = 3 * time.Second

// harness drives the embedded server. Every session has a gate of its own
// on its sockets, so Partition can cut it alone (TestFaultCut… does the
// same through a TCP proxy).
func harness(t *testing.T) batontest.Harness {
	var n atomic.Int64
	var gates sync.Map // *baton.Session → *gate
	admin := rawClient(t, server(t).Endpoints())
	return batontest.Harness{
		Name: "etcd",
		// The queue load tests run at full size (1,000 items) now that
		// the test server runs outside the race detector.
		LoadScale: 1,
		Open: func(t testing.TB, ttl time.Duration) *baton.Session {
			if ttl == 0 {
				ttl = testTTL
			}
			g := newGate()
			cli, err := clientv3.New(clientv3.Config{
				Endpoints:            server(t).Endpoints(),
				DialTimeout:          dialTimeout,
				DialKeepAliveTime:    time.Second,
				DialKeepAliveTimeout: time.Second,
				DialOptions:          []grpc.DialOption{grpc.WithContextDialer(g.dial)},
				Logger:               zap.NewNop(),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cli.Close() })
			s := openT(t, nil, WithClient(cli), WithTTL(ttl))
			gates.Store(s, g)
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
			g, ok := gates.Load(s)
			if !ok {
				t.Fatalf("session %s not opened by the harness", s.ID())
			}
			return g.(*gate).shut()
		},
		DropCreateReply: func(_ testing.TB, s *baton.Session) {
			s.Conn().(*conn).dropCreateReply.Store(true)
		},
		PendingWatches: func(t testing.TB) int { return watchers(t, server(t).Endpoints()[0]) },
	}
}

// watchers reads the number of watchers set on the server from its
// metrics (etcd_debugging_mvcc_watcher_total).
func watchers(t testing.TB, endpoint string) int {
	const metric = "etcd_debugging_mvcc_watcher_total "
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(endpoint + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), metric); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metrics: %q: %v", sc.Text(), err)
			}
			return int(n)
		}
	}
	t.Fatalf("metrics: no %s", strings.TrimSpace(metric))
	return 0
}

func TestConformance(t *testing.T) {
	batontest.Run(t, harness(t))
}
