package redsync_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

var seq atomic.Int64

// spellings are a lock name as users write it, given to baton and redsync
// alike: bare, with a leading "/", and nested. Each is its key, as
// written (baton.CleanName's rule).
func spellings(t *testing.T) []string {
	k := fmt.Sprintf("interop:%s:%d", t.Name(), seq.Add(1))
	return []string{k, "/" + k + ":abs", k + ":nested/a/b"}
}

// otherSpelling is name with its leading "/" added or taken off: another
// key.
func otherSpelling(name string) string {
	if s, ok := strings.CutPrefix(name, "/"); ok {
		return s
	}
	return "/" + name
}

func rsPools(t *testing.T, srvs []*redistest.Server) []rsredis.Pool {
	var pools []rsredis.Pool
	for _, s := range srvs {
		c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		pools = append(pools, rsgoredis.NewPool(c))
	}
	return pools
}

func dial(t *testing.T, s *redistest.Server) *redis.Client {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redis.Dial(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rsLock retries redsync's bounded Lock until ctx ends.
func rsLock(ctx context.Context, m *redsync.Mutex) error {
	for {
		err := m.LockContext(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		var taken *redsync.ErrTaken
		if !errors.Is(err, redsync.ErrFailed) && !errors.As(err, &taken) {
			return err
		}
	}
}

type locker interface {
	lock(context.Context) (int64, error)
	unlock(context.Context) error
}

type batonLocker struct {
	m interface {
		Lock(context.Context) (*baton.Lease, error)
		Unlock(context.Context) error
	}
}

func (b batonLocker) lock(ctx context.Context) (int64, error) {
	l, err := b.m.Lock(ctx)
	if err != nil {
		return 0, err
	}
	return l.Token(), nil
}
func (b batonLocker) unlock(ctx context.Context) error { return b.m.Unlock(ctx) }

type rsLocker struct{ m *redsync.Mutex }

func (r rsLocker) lock(ctx context.Context) (int64, error) { return 0, rsLock(ctx, r.m) }
func (r rsLocker) unlock(ctx context.Context) error {
	ok, err := r.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync unlock: not held")
	}
	return err
}

// exclusion runs every locker through cycles lock/unlock cycles and checks
// that no two critical sections overlap.
func exclusion(t *testing.T, ctx context.Context, lockers []locker, cycles int) {
	var chk batontest.Checker
	var wg sync.WaitGroup
	errs := make(chan error, len(lockers))
	for i, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range cycles {
				tok, err := l.lock(ctx)
				if err != nil {
					errs <- fmt.Errorf("locker %d: %w", i, err)
					return
				}
				sp := chk.Enter(i, tok)
				batontest.Hold(nil)
				chk.Leave(sp)
				if err := l.unlock(ctx); err != nil {
					errs <- fmt.Errorf("locker %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := chk.Verify(false); err != nil {
		t.Fatal(err)
	}
	if n := len(chk.Spans()); n != len(lockers)*cycles {
		t.Fatalf("%d sections, want %d", n, len(lockers)*cycles)
	}
}

// baton's Mutex and redsync given the same name contend on one key, for
// every spelling of it; the other spelling is another key, which either
// takes while the first is held.
func TestMutexAndRedsyncExcludeEachOther(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	// baton's restart guard keeps a server up for less than a lock's TTL
	// from granting (TryLock below would be refused): wait out the
	// longest TTL used here.
	srv.WaitUp(2 * time.Second)
	for _, k := range spellings(t) {
		t.Run(strings.ReplaceAll(k, "/", "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rs := redsync.New(rsPools(t, []*redistest.Server{srv})...)
			rm := rs.NewMutex(k, redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
			bm := redis.NewMutex(dial(t, srv), k, redis.WithTTL(time.Second))
			other := otherSpelling(k)

			if _, err := bm.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := rm.LockContext(ctx); err == nil {
				t.Fatal("redsync locked a key baton holds")
			}
			ro := rs.NewMutex(other, redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
			if err := ro.LockContext(ctx); err != nil {
				t.Fatalf("redsync on %q while baton holds %q: %v (another key)", other, k, err)
			}
			if ok, err := ro.UnlockContext(ctx); !ok || err != nil {
				t.Fatalf("redsync unlock %q: %v %v", other, ok, err)
			}
			if err := bm.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := rm.LockContext(ctx); err != nil {
				t.Fatalf("redsync on a free key: %v", err)
			}
			if _, err := bm.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
				t.Fatalf("baton TryLock on a key redsync holds: %v", err)
			}
			bo := redis.NewMutex(dial(t, srv), other, redis.WithTTL(time.Second))
			if _, err := bo.TryLock(ctx); err != nil {
				t.Fatalf("baton TryLock on %q while redsync holds %q: %v (another key)", other, k, err)
			}
			if err := bo.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			// A baton waiter wakes when redsync's key is gone (redsync
			// publishes nothing: the waiter's fallback is the key's ttl
			// and its refresh).
			got := make(chan error, 1)
			go func() { _, err := bm.Lock(ctx); got <- err }()
			if ok, err := rm.UnlockContext(ctx); !ok || err != nil {
				t.Fatalf("redsync unlock: %v %v", ok, err)
			}
			if err := <-got; err != nil {
				t.Fatal(err)
			}
			_ = bm.Unlock(ctx)

			var lockers []locker
			for range 3 {
				lockers = append(lockers, batonLocker{redis.NewMutex(dial(t, srv), k, redis.WithTTL(2*time.Second))})
				rsm := redsync.New(rsPools(t, []*redistest.Server{srv})...).NewMutex(k,
					redsync.WithExpiry(2*time.Second), redsync.WithRetryDelay(time.Millisecond))
				lockers = append(lockers, rsLocker{rsm})
			}
			exclusion(t, ctx, lockers, 6)
		})
	}
}

// baton's Redlock and redsync on the same masters and name exclude each
// other, for every spelling of the name.
func TestRedlockAndRedsyncExcludeEachOther(t *testing.T) {
	srvs := redistest.StartN(t, 5, redistest.Config{})
	for _, s := range srvs {
		s.WaitUp(time.Second) // the restart guard, as above
	}
	var urls []string
	for _, s := range srvs {
		urls = append(urls, s.URL())
	}
	for _, k := range spellings(t) {
		t.Run(strings.ReplaceAll(k, "/", "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var lockers []locker
			for range 2 {
				q, err := redis.DialRedlock(ctx, urls)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = q.Close() })
				lockers = append(lockers, batonLocker{redis.NewRedlock(q, k, redis.WithTTL(time.Second))})
				rsm := redsync.New(rsPools(t, srvs)...).NewMutex(k,
					redsync.WithExpiry(time.Second), redsync.WithRetryDelay(time.Millisecond))
				lockers = append(lockers, rsLocker{rsm})
			}
			exclusion(t, ctx, lockers, 6)
		})
	}
}

// On Redis Cluster, baton's Mutex and redsync given the same name
// contend on one key (baton's other keys carry the name as a hash tag, in
// the key's slot), for every spelling of it.
func TestClusterMutexAndRedsyncExcludeEachOther(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 1)
	var addrs []string
	for _, s := range cl.Nodes {
		addrs = append(addrs, s.Addr())
	}
	rsCluster := func(t *testing.T) *redsync.Redsync {
		c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
		t.Cleanup(func() { _ = c.Close() })
		return redsync.New(rsgoredis.NewPool(c))
	}
	dialCluster := func(t *testing.T) *redis.Client {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := redis.Dial(ctx, cl.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	for _, k := range spellings(t) {
		t.Run(strings.ReplaceAll(k, "/", "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rm := rsCluster(t).NewMutex(k, redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
			bm := redis.NewMutex(dialCluster(t), k, redis.WithTTL(time.Second))
			if _, err := bm.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := rm.LockContext(ctx); err == nil {
				t.Fatal("redsync locked a key baton holds")
			}
			if err := bm.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := rm.LockContext(ctx); err != nil {
				t.Fatalf("redsync on a free key: %v", err)
			}
			if _, err := bm.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
				t.Fatalf("baton TryLock on a key redsync holds: %v", err)
			}
			// A baton waiter wakes when redsync's key is gone.
			got := make(chan error, 1)
			go func() { _, err := bm.Lock(ctx); got <- err }()
			if ok, err := rm.UnlockContext(ctx); !ok || err != nil {
				t.Fatalf("redsync unlock: %v %v", ok, err)
			}
			if err := <-got; err != nil {
				t.Fatal(err)
			}
			_ = bm.Unlock(ctx)

			var lockers []locker
			for range 3 {
				lockers = append(lockers, batonLocker{redis.NewMutex(dialCluster(t), k, redis.WithTTL(2*time.Second))})
				rsm := rsCluster(t).NewMutex(k, redsync.WithExpiry(2*time.Second), redsync.WithRetryDelay(time.Millisecond))
				lockers = append(lockers, rsLocker{rsm})
			}
			exclusion(t, ctx, lockers, 6)
		})
	}
}

// On a Sentinel-managed master, baton's Mutex (dialed by its sentinels)
// and redsync (a plain client to the master the sentinels name) given the
// same name contend on one key, for every spelling of it.
func TestSentinelMutexAndRedsyncExcludeEachOther(t *testing.T) {
	tp := redistest.StartSentinel(t, 1, 1)
	for _, s := range tp.Servers {
		s.WaitUp(2 * time.Second) // the restart guard, as above
	}
	master := tp.Master()
	dialSentinel := func(t *testing.T) *redis.Client {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := redis.Dial(ctx, tp.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	for _, k := range spellings(t) {
		t.Run(strings.ReplaceAll(k, "/", "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rs := redsync.New(rsPools(t, []*redistest.Server{master})...)
			rm := rs.NewMutex(k, redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
			bm := redis.NewMutex(dialSentinel(t), k, redis.WithTTL(time.Second), redis.WithReplicas(1))
			if _, err := bm.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := rm.LockContext(ctx); err == nil {
				t.Fatal("redsync locked a key baton holds")
			}
			if err := bm.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := rm.LockContext(ctx); err != nil {
				t.Fatalf("redsync on a free key: %v", err)
			}
			if _, err := bm.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
				t.Fatalf("baton TryLock on a key redsync holds: %v", err)
			}
			if ok, err := rm.UnlockContext(ctx); !ok || err != nil {
				t.Fatalf("redsync unlock: %v %v", ok, err)
			}

			var lockers []locker
			for range 2 {
				lockers = append(lockers, batonLocker{redis.NewMutex(dialSentinel(t), k, redis.WithTTL(2*time.Second))})
				rsm := redsync.New(rsPools(t, []*redistest.Server{master})...).NewMutex(k,
					redsync.WithExpiry(2*time.Second), redsync.WithRetryDelay(time.Millisecond))
				lockers = append(lockers, rsLocker{rsm})
			}
			exclusion(t, ctx, lockers, 6)
		})
	}
}
