package obstest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/internal/zktest"
	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/zk"
)

func TestMain(m *testing.M) {
	code := zktest.Main(m)
	if etcdServer.srv != nil {
		etcdServer.srv.Stop()
	}
	if etcdServer.dir != "" {
		_ = os.RemoveAll(etcdServer.dir)
	}
	if code == 0 {
		// Every session and client the tests open is closed.
		if err := redistest.FindLeaks(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines outlive the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// etcdServer is one etcd server for the whole test binary, started on
// first use.
var etcdServer struct {
	once sync.Once
	dir  string
	srv  *etcdtest.Server
	err  error
}

// ttl is the session TTL of these tests: short, so that a cut loses the
// session quickly, long enough for a loaded machine.
const ttl = 2 * time.Second

// proxies remembers the proxy each session dials through, to cut it.
var proxies sync.Map // *baton.Session → *proxy.Proxy

func cutProxy(t *testing.T, s *baton.Session) func() {
	p, ok := proxies.Load(s)
	if !ok {
		t.Fatalf("session %s has no proxy", s.ID())
	}
	p.(*proxy.Proxy).Blackhole()
	return p.(*proxy.Proxy).Heal
}

// proxiedStore is a store whose sessions each dial through a proxy of
// their own in front of the server at addr (cut blackholes it); admin, a
// session of its own, deletes nodes as an operator would.
func proxiedStore(name, addr string, admin *baton.Session, dial func(ctx context.Context, addr string, tel baton.Telemetry) (*baton.Session, error)) store {
	return store{
		name: name,
		open: func(t *testing.T, tel baton.Telemetry) *baton.Session {
			p := proxy.Start(t, addr)
			s, err := dial(ctxT(t), p.Addr(), tel)
			if err != nil {
				t.Fatal(err)
			}
			proxies.Store(s, p)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = s.Close(ctx)
			})
			return s
		},
		cut:        cutProxy,
		deleteNode: deleteAs(admin),
	}
}

// deleteAs deletes a node with admin's connection.
func deleteAs(admin *baton.Session) func(t *testing.T, n backend.Node) {
	return func(t *testing.T, n backend.Node) {
		if err := admin.Conn().Delete(ctxT(t), n); err != nil {
			t.Fatal(err)
		}
	}
}

func memoryStore(t *testing.T) store {
	st := memory.New()
	admin, err := st.Open(context.Background(), memory.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	return store{
		name: "memory",
		open: func(t *testing.T, tel baton.Telemetry) *baton.Session {
			s, err := st.Open(context.Background(), memory.WithTTL(ttl), memory.WithTelemetry(tel))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close(context.Background()) })
			return s
		},
		cut:        func(_ *testing.T, s *baton.Session) func() { return st.Partition(s.ID()) },
		deleteNode: deleteAs(admin),
	}
}

func zkStore(t *testing.T) store {
	srv := zktest.Shared(t)
	admin, err := zk.Open(ctxT(t), srv.Servers(), zk.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	return proxiedStore("zk", srv.Addr(), admin, func(ctx context.Context, addr string, tel baton.Telemetry) (*baton.Session, error) {
		return zk.Open(ctx, []string{addr}, zk.WithTTL(ttl), zk.WithTelemetry(tel))
	})
}

func etcdStore(t *testing.T) store {
	etcdServer.once.Do(func() {
		etcdServer.dir, etcdServer.err = os.MkdirTemp("", "obstest-etcd-")
		if etcdServer.err == nil {
			etcdServer.srv, etcdServer.err = etcdtest.New(etcdServer.dir)
		}
	})
	if etcdServer.err != nil {
		t.Fatalf("etcd: %v", etcdServer.err)
	}
	srv := etcdServer.srv
	admin, err := etcd.Open(ctxT(t), srv.Endpoints(), etcd.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	return proxiedStore("etcd", srv.Addr(), admin, func(ctx context.Context, addr string, tel baton.Telemetry) (*baton.Session, error) {
		return etcd.Open(ctx, []string{"http://" + addr}, etcd.WithTTL(ttl), etcd.WithTelemetry(tel))
	})
}

// eachStore runs f on every backend with sessions (Redis has its own
// tests).
func eachStore(t *testing.T, f func(t *testing.T, st store)) {
	for _, mk := range []func(*testing.T) store{memoryStore, zkStore, etcdStore} {
		st := mk(t)
		t.Run(st.name, func(t *testing.T) { f(t, st) })
	}
}
