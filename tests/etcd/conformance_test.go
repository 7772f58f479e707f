package etcd_test

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
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/testca"
)

// testTTL is the session TTL of the conformance tests: short enough for the fault tests, long enough for a loaded machine under -race.
const testTTL = 3 * time.Second

// harness drives the embedded server. Every session has a gate of its own
// on its sockets, so Partition can cut it alone (TestFaultCut… does the
// same through a TCP proxy).
func harness(t *testing.T) batontest.Harness {
	return harnessOn(t, "etcd", server(t).Endpoints(), clientv3.Config{})
}

// harnessOn is harness on the server at endpoints, every client made from
// base (its TLS and credentials).
func harnessOn(t *testing.T, name string, endpoints []string, base clientv3.Config) batontest.Harness {
	return harnessSpread(t, name, endpoints, base, false)
}

// harnessSpread is harnessOn; with spread, the sessions it opens take the
// endpoints (the members of a cluster) in turn, one each, so that what one
// session does is checked from a session on another member.
func harnessSpread(t *testing.T, name string, endpoints []string, base clientv3.Config, spread bool) batontest.Harness {
	var opened atomic.Int64
	const root = "/baton/" // every test's keys are under it
	var n atomic.Int64
	var gates sync.Map // *baton.Session → *gate
	acfg := base
	acfg.Endpoints, acfg.DialTimeout = endpoints, 5*time.Second
	admin, err := clientv3.New(acfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	h := batontest.Harness{
		Name: name,
		// The queue load tests run at full size (1,000 items) now that
		// the test server runs outside the race detector.
		LoadScale: 1,
		// Priority queue items are in etcd's recipes layout.
		MaxPriority: etcd.MaxPriority,
		Open: func(t testing.TB, ttl time.Duration) *baton.Session {
			if ttl == 0 {
				ttl = testTTL
			}
			g := newGate()
			cfg := base
			cfg.Endpoints = endpoints
			if spread {
				i := int(opened.Add(1)-1) % len(endpoints)
				cfg.Endpoints = endpoints[i : i+1]
			}
			cfg.DialTimeout = 5 * time.Second
			cfg.DialKeepAliveTime, cfg.DialKeepAliveTimeout = time.Second, time.Second
			cfg.DialOptions = []grpc.DialOption{grpc.WithContextDialer(g.dial)}
			cfg.Logger = zap.NewNop()
			cli, err := clientv3.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cli.Close() })
			s := openT(t, nil, etcd.WithClient(cli), etcd.WithTTL(ttl))
			gates.Store(s, g)
			return s
		},
		Path: func(testing.TB) string { return fmt.Sprintf("%stest-%d", root, n.Add(1)) },
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
		// The next create of s reaches the server and is applied, and
		// its reply is lost with the connection: the gate holds what
		// the server sends s until a watch sees a key of s's lease
		// made, then cuts.
		DropCreateReply: func(t testing.TB, s *baton.Session) {
			g, ok := gates.Load(s)
			if !ok {
				t.Fatalf("session %s not opened by the harness", s.ID())
			}
			lease, err := strconv.ParseInt(s.ID(), 16, 64)
			if err != nil {
				t.Fatalf("session id %q: %v", s.ID(), err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			t.Cleanup(cancel)
			resp, err := admin.Get(ctx, root, clientv3.WithKeysOnly())
			if err != nil {
				cancel()
				t.Fatalf("drop create reply: %v", err)
			}
			wch := admin.Watch(ctx, root, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
			cut, release := g.(*gate).holdReplies()
			go func() {
				defer cancel()
				for wr := range wch {
					for _, ev := range wr.Events {
						if ev.IsCreate() && ev.Kv.Lease == lease {
							cut()
							return
						}
					}
				}
				release() // nothing made in time
			}()
		},
	}
	if base.TLS == nil {
		h.PendingWatches = func(t testing.TB) int {
			n := 0
			for _, ep := range endpoints {
				n += watchers(t, ep)
			}
			return n
		}
	}
	return h
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

// The three conformance suites (here, on a secure server, on a cluster)
// run beside each other, each on servers of its own, once the package's
// other tests are done: most of their time is spent waiting for leases and
// timeouts.
func TestConformance(t *testing.T) {
	t.Parallel()
	batontest.Run(t, harness(t))
}

func TestConn(t *testing.T) {
	batontest.RunConn(t, harness(t))
}

// TestLocker runs the baton.Locker suite on baton.Mutex, beside the
// conformance suites: on the same server, so under names of its own.
func TestLocker(t *testing.T) {
	t.Parallel()
	h := harness(t)
	next := h.Path
	h.Path = func(t testing.TB) string { return strings.Replace(next(t), "/test-", "/locker-", 1) }
	batontest.RunLocker(t, batontest.MutexLockers(h, false))
	t.Run("Reentrant", func(t *testing.T) { batontest.RunLocker(t, batontest.MutexLockers(h, true, baton.Reentrant())) })
}

// TestConformanceSecure runs the whole conformance suite, and the Conn
// suite, on a server with
// TLS (client certificates required) and authentication on, every session
// logged in as a user whose role covers the test prefix only.
func TestConformanceSecure(t *testing.T) {
	t.Parallel()
	ca := testca.New(t, "baton etcd conformance CA")
	srvCert, client := ca.Issue(t, "server"), ca.Issue(t, "client")
	srv := etcdtest.StartWith(t, etcdtest.Options{CertFile: srvCert.CertFile, KeyFile: srvCert.KeyFile,
		ClientCAFile: ca.CertFile, RootPassword: rootPW})
	tlsCfg := ca.ClientConfig(t, &client)
	root, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 10 * time.Second,
		TLS: tlsCfg, Username: "root", Password: rootPW, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ctx := testCtx(t)
	const user, pw = "worker", "w0rker-Pa55"
	for _, step := range []func() error{
		func() error { _, err := root.RoleAdd(ctx, "baton-test"); return err },
		func() error {
			_, err := root.RoleGrantPermission(ctx, "baton-test", "/baton/", clientv3.GetPrefixRangeEnd("/baton/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		// Mutex/NameForms writes the test's names without their "/"
		// too: another key prefix to etcd (baton.CleanName).
		func() error {
			_, err := root.RoleGrantPermission(ctx, "baton-test", "baton/", clientv3.GetPrefixRangeEnd("baton/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		// A PriorityQueue's puts write etcd's base keys __NAME/<priority>
		// too (docs/etcd.md).
		func() error {
			_, err := root.RoleGrantPermission(ctx, "baton-test", "__/baton/", clientv3.GetPrefixRangeEnd("__/baton/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := root.UserAdd(ctx, user, pw); return err },
		func() error { _, err := root.UserGrantRole(ctx, user, "baton-test"); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	h := harnessOn(t, "etcd-secure", srv.Endpoints(), clientv3.Config{TLS: tlsCfg, Username: user, Password: pw})
	batontest.Run(t, h)
	batontest.RunConn(t, h)
}
