package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/etcd/embedded"
)

// srv is one embedded etcd shared by the package's tests; each test uses
// its own prefix.
var srv *embedded.Server

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "baton-etcd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err = embedded.Start(ctx, embedded.Config{DataDir: dir, Fast: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "embedded etcd:", err)
		return 1
	}
	defer srv.Close()
	return m.Run()
}

func server(testing.TB) *embedded.Server { return srv }

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openT(t testing.TB, endpoints []string, opts ...Option) *baton.Session {
	t.Helper()
	if len(opts) == 0 {
		opts = []Option{WithTTL(time.Second)}
	}
	s, err := Open(testCtx(t), endpoints, opts...)
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
	_, err := Open(testCtx(t), s.Endpoints(), WithTTL(500*time.Millisecond))
	if !errors.Is(err, baton.ErrInvalidTTL) {
		t.Fatalf("500ms: got %v", err)
	}
}
