package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"go.uber.org/goleak"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/etcd/embedded"
	"github.com/batonhq/baton/internal/etcdtest"
)

// srv is one etcd shared by the package's tests, each test under its own
// prefix: baton's embedded server in a process of its own, so that a -race
// test binary does not run the server under the race detector too.
var srv *etcdtest.Server

// TestMain runs the tests on a shared server and, once it has stopped,
// fails the package if a goroutine outlives them: every session's
// (the keepalive loop, watches, abandoned requests) ends with Close.
func TestMain(m *testing.M) {
	code := runMain(m)
	if code == 0 {
		if err := goleak.Find(leakOptions...); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines outlive the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "baton-etcd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv, err = etcdtest.New(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd test server:", err)
		return 1
	}
	defer srv.Stop()
	return m.Run()
}

// leakOptions are the goroutines goleak may find that are not ours.
var leakOptions []goleak.Option

func server(testing.TB) *etcdtest.Server { return srv }

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openT(t testing.TB, endpoints []string, opts ...etcd.Option) *baton.Session {
	t.Helper()
	if len(opts) == 0 {
		opts = []etcd.Option{etcd.WithTTL(time.Second)}
	}
	s, err := etcd.Open(testCtx(t), endpoints, opts...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func rawClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func TestMutexContended(t *testing.T) {
	s := server(t)
	const workers, rounds = 4, 10
	var inside, total atomic.Int32
	var lastToken atomic.Int64
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		sess := openT(t, s.Endpoints())
		m := baton.NewMutex(sess, "/test/contended")
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := testCtx(t)
			for r := 0; r < rounds; r++ {
				l, err := m.Lock(ctx)
				if err != nil {
					errs <- err
					return
				}
				if inside.Add(1) != 1 {
					errs <- errors.New("two holders")
				}
				if tok := l.Token(); tok <= lastToken.Load() {
					errs <- errors.New("token not increasing")
				} else {
					lastToken.Store(tok)
				}
				total.Add(1)
				inside.Add(-1)
				if err := m.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if total.Load() != workers*rounds {
		t.Fatalf("got %d acquisitions", total.Load())
	}
}

func TestInvalidTTL(t *testing.T) {
	s := server(t)
	_, err := etcd.Open(testCtx(t), s.Endpoints(), etcd.WithTTL(500*time.Millisecond))
	if !errors.Is(err, baton.ErrInvalidTTL) {
		t.Fatalf("500ms: got %v", err)
	}
}

// A server with default raft timings grants leases of at least 2 s; asking
// for 1 s is reported, not silently raised.
func TestTTLBelowServerMinimum(t *testing.T) {
	ctx := testCtx(t)
	s, err := embedded.Start(ctx, embedded.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	_, err = etcd.Open(ctx, s.Endpoints(), etcd.WithTTL(time.Second))
	if !errors.Is(err, baton.ErrInvalidTTL) {
		t.Fatalf("1s on a default server: %v, want ErrInvalidTTL", err)
	}
	t.Log(err)
	sess, err := etcd.Open(ctx, s.Endpoints(), etcd.WithTTL(2500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	if sess.TTL() != 3*time.Second {
		t.Fatalf("TTL %v, want 2.5s rounded up to 3s", sess.TTL())
	}
}

func TestInvalidNames(t *testing.T) {
	ctx := testCtx(t)
	c := openT(t, server(t).Endpoints()).Conn()
	for _, dir := range []string{"", "/", "a\x00b", "a\nb", "a/../b", "/a/..", "./a", "a\u0085b", "a\xffb", "a\x1b[2Jb", strings.Repeat("k", 8<<10)} {
		if _, err := c.Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("dir %.20q: %v, want ErrInvalidName", dir, err)
		}
	}
	for _, kind := range []string{"", "a/b", "x\x7f"} {
		if _, err := c.Create(ctx, "/names", kind, nil, 0); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("name %q: %v, want ErrInvalidName", kind, err)
		}
	}
}

// Key names per kind (etcd/names_test.go parses them back).
func TestNaming(t *testing.T) {
	ctx := testCtx(t)
	s := openT(t, server(t).Endpoints())
	c := s.Conn()
	id := s.ID()
	dir := "/naming"
	want := map[string]string{
		backend.KindLock:  id,
		backend.KindLatch: "latch-" + id,
		backend.KindRead:  "read-" + id,
		backend.KindWrite: "write-" + id,
		backend.KindLease: "lease-" + id,
	}
	for kind, name := range want {
		n, err := c.Create(ctx, dir, kind, nil, backend.Ephemeral|backend.Sequential)
		if err != nil {
			t.Fatal(err)
		}
		if n.Name != name || n.Kind != kind || n.Owner != id || n.Token == 0 {
			t.Errorf("%s: node %+v, want name %s", kind, n, name)
		}
	}
	// A second contender of a kind on the same session: NAME/<lease>_1.
	n, err := c.Create(ctx, dir, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if err != nil || n.Name != id+"_1" || n.Kind != backend.KindLock {
		t.Fatalf("second lock node %+v, %v", n, err)
	}
	q, err := c.Create(ctx, dir, backend.KindQueue, []byte("x"), backend.Sequential)
	if err != nil || q.Kind != backend.KindQueue || q.Owner != "" {
		t.Fatalf("queue item %+v, %v", q, err)
	}
	if _, err := c.Create(ctx, dir+"/sub", backend.KindLock, nil, backend.Ephemeral|backend.Sequential); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, dir, "ready", nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, dir, "ready", nil, 0); !errors.Is(err, baton.ErrExists) {
		t.Fatalf("second create of a literal name: %v, want ErrExists", err)
	}
	kids, err := c.Children(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Direct children only (not dir/sub/…), sequential by revision, then
	// the literal "ready".
	if len(kids) != len(want)+3 {
		t.Fatalf("%d children, want %d: %+v", len(kids), len(want)+3, kids)
	}
	for i := 1; i < len(kids)-1; i++ {
		if kids[i].Seq <= kids[i-1].Seq {
			t.Fatalf("children out of order: %+v", kids)
		}
	}
	if last := kids[len(kids)-1]; last.Name != "ready" || last.Kind != "ready" {
		t.Fatalf("last child %+v, want the literal ready", last)
	}

}
