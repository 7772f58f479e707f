package etcd_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/etcdtest"
)

// The backend on Debian's etcd-server (3.4): contended Mutex, TryLock and
// a session expiry, on a server that predates the embedded one.
func TestDebianEtcd34(t *testing.T) {
	ctx := testCtx(t)
	srv := etcdtest.StartBinary(t, etcdtest.DebianEtcd)
	if v, err := srv.Version(ctx); err == nil {
		t.Logf("server version %s", v)
	}
	const clients, cycles = 4, 10
	name := "/etcd34/mutex"
	var mu sync.Mutex
	holders, last := 0, int64(0)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		s := openT(t, srv.Endpoints(), etcd.WithTTL(faultTTL))
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := baton.NewMutex(s, name)
			for range cycles {
				l, err := m.Lock(ctx)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				holders++
				if holders != 1 || l.Token() <= last {
					errs <- errors.New("two holders, or a token not increasing")
				}
				last = l.Token()
				holders--
				mu.Unlock()
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

	a := openT(t, srv.Endpoints(), etcd.WithTTL(faultTTL))
	b := openT(t, srv.Endpoints(), etcd.WithTTL(faultTTL))
	if _, err := baton.NewMutex(a, name).TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := baton.NewMutex(b, name).TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock on a held lock: %v", err)
	}
	got := make(chan error, 1)
	go func() { _, err := baton.NewMutex(b, name).Lock(ctx); got <- err }()
	if !await.Within(10*time.Second, func() bool { return kindCount(t, b, name, backend.KindLock) == 2 }) {
		t.Fatal("waiter never queued")
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter after the holder closed: %v", err)
	}
}
