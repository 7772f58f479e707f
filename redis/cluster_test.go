package redis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/rediskeys"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// TestCluster runs the Redis Cluster tests on one cluster of three
// masters with a replica each. The slot migration and the failover
// under load are in the fault suite (reliability/redis_cluster_test.go).
func TestCluster(t *testing.T) {
	start := time.Now()
	cl := redistest.StartCluster(t, 3, 1)
	t.Logf("cluster up in %v", time.Since(start).Round(time.Millisecond))
	t.Run("KeysInOneSlot", func(t *testing.T) { testClusterKeysInOneSlot(t, cl) })
	t.Run("Locker", func(t *testing.T) {
		batontest.RunLocker(t, clusterLockers(cl, false))
		t.Run("Reentrant", func(t *testing.T) { batontest.RunLocker(t, clusterLockers(cl, true, redis.Reentrant())) })
	})
	t.Run("WithReplicasRefused", func(t *testing.T) {
		_, err := redis.NewMutex(dialCluster(t, cl), "x", redis.WithReplicas(1)).Lock(within(t, 10*time.Second))
		if err == nil || !strings.Contains(err.Error(), "not supported on a Redis Cluster") {
			t.Fatalf("WithReplicas on a cluster: %v, want a refusal", err)
		}
	})
	t.Run("RedlockRefused", func(t *testing.T) {
		q := redis.NewQuorum(dialCluster(t, cl))
		_, err := redis.NewRedlock(q, "x").Lock(within(t, 10*time.Second))
		if err == nil || !strings.Contains(err.Error(), "is a Redis Cluster; use NewMutex") {
			t.Fatalf("Redlock on a cluster: %v, want a refusal", err)
		}
	})
}

// dialCluster connects to the cluster and closes the client when the test
// ends.
func dialCluster(t testing.TB, cl *redistest.Cluster) *redis.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redis.Dial(ctx, cl.URL())
	if err != nil {
		t.Fatalf("dial %s: %v", cl.URL(), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The server's CLUSTER KEYSLOT agrees with the key layout: a lock's keys
// are in the slot of its name, braces or not.
func testClusterKeysInOneSlot(t *testing.T, cl *redistest.Cluster) {
	c := dialCluster(t, cl)
	ctx := within(t, 20*time.Second)
	for _, name := range []string{"x", "/x", "a/b", "jobs/x", "a{b}", "{b}a", "a{}b", "a}b", "a{b"} {
		tok, q := rediskeys.ClusterKeys(name)
		for _, k := range []string{name, tok, q, rediskeys.Channel(rediskeys.Slot(name), "id")} {
			got, err := c.Redis().ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if int(got) != rediskeys.Slot(name) {
				t.Errorf("%q: key %q in slot %d, the name in %d", name, k, got, rediskeys.Slot(name))
			}
		}
		// And a lock on it works, with a waiter handed the lock.
		m1, m2 := redis.NewMutex(c, name), redis.NewMutex(dialCluster(t, cl), name)
		l1, err := m1.Lock(ctx)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		got := make(chan error, 1)
		var l2 *baton.Lease
		go func() {
			var err error
			l2, err = m2.Lock(ctx)
			got <- err
		}()
		waitQueued(t, c, tok, q)
		if err := m1.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("%q: waiter: %v", name, err)
		}
		if l2.Token() <= l1.Token() {
			t.Errorf("%q: tokens %d then %d", name, l1.Token(), l2.Token())
		}
		if err := m2.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// waitQueued waits until the line q has an entry.
func waitQueued(t *testing.T, c *redis.Client, _, q string) {
	t.Helper()
	await.Until(t, 10*time.Second, "somebody in line "+q, func() bool {
		n, err := c.Redis().ZCard(context.Background(), q).Result()
		return err == nil && n > 0
	})
}

// clusterLockers is the baton.Locker harness of Cluster-backed Mutexes
// with opts (reentrant says whether opts make them re-entrant), each on a
// Client of its own whose connections a switch can cut.
func clusterLockers(cl *redistest.Cluster, reentrant bool, opts ...redis.Option) batontest.LockerHarness {
	return batontest.LockerHarness{
		Name:      label("redis.Mutex on Redis Cluster", reentrant),
		Reentrant: reentrant,
		Tokens:    true,
		New: func(t *testing.T, n int, ttl time.Duration) batontest.LockerSet {
			if ttl == 0 {
				ttl = time.Second
			}
			key := freshKey(t)
			direct := dialCluster(t, cl)
			tok, q := rediskeys.ClusterKeys(key)
			_ = tok
			cuts := make([]*cutDialer, n)
			lockers := make([]baton.Locker, n)
			for i := range lockers {
				cuts[i] = &cutDialer{conns: map[net.Conn]bool{}}
				c := redis.NewClient(goredis.NewClusterClient(&goredis.ClusterOptions{
					Addrs: addrsOf(cl), Dialer: cuts[i].dial,
					ContextTimeoutEnabled: true, MaxRetries: -1, MaxRedirects: 14,
				}))
				t.Cleanup(func() { _ = c.Close(); _ = c.Redis().Close() })
				lockers[i] = redis.NewMutex(c, key, append(opts, redis.WithTTL(ttl))...)
			}
			return batontest.LockerSet{
				Lockers: lockers,
				Contenders: func(t *testing.T) int {
					ctx := context.Background()
					held, err := direct.Redis().Exists(ctx, key).Result()
					if err != nil {
						t.Fatal(err)
					}
					line, err := direct.Redis().ZCard(ctx, q).Result()
					if err != nil {
						t.Fatal(err)
					}
					return int(held + line)
				},
				Cut: func(t *testing.T, i int) func() {
					cuts[i].set(true)
					return func() { cuts[i].set(false) }
				},
			}
		},
	}
}

func addrsOf(cl *redistest.Cluster) []string {
	var out []string
	for _, s := range cl.Nodes {
		out = append(out, s.Addr())
	}
	return out
}

// cutDialer dials the cluster's nodes, or while cut refuses to and has
// closed every connection it made: the client is cut off every node.
type cutDialer struct {
	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

var errCut = errors.New("cut off (test)")

func (d *cutDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errCut
	}
	var nd net.Dialer
	cn, err := nd.DialContext(ctx, network, addr)
	if err == nil {
		d.conns[cn] = true
	}
	return cn, err
}

func (d *cutDialer) set(cut bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = cut
	if cut {
		for cn := range d.conns {
			_ = cn.Close()
		}
		d.conns = map[net.Conn]bool{}
	}
}

// A cluster URL with a database number, or an empty host, is refused with
// the URL, its password redacted.
func TestClusterBadURL(t *testing.T) {
	ctx := within(t, 10*time.Second)
	for _, u := range []string{"redis-cluster://:s3cret@h:1/3", "redis-cluster://:s3cret@h:1,,h:2", "rediss-cluster://:s3cret@h:1?ca_file=/nonexistent"} {
		_, err := redis.Dial(ctx, u)
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "redis-cluster://") && !strings.Contains(err.Error(), "rediss-cluster://") {
			t.Errorf("Dial(%q) = %v, want an error naming the redacted URL", u, err)
		}
	}
}

// rediss-cluster://: every node accepts only TLS; the CA comes from the
// URL's ca_file. A waiter is handed the lock over the TLS connections.
func TestClusterTLS(t *testing.T) {
	cl := redistest.StartTLSCluster(t, 3, 1)
	ctx := within(t, 30*time.Second)
	dial := func() *redis.Client {
		c, err := redis.Dial(ctx, cl.URL()+"?ca_file="+cl.CAFile())
		if err != nil {
			t.Fatalf("dial %s: %v", cl.URL(), err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	if _, err := redis.Dial(ctx, strings.Replace(cl.URL(), "rediss-cluster", "redis-cluster", 1)+"?dial_timeout=1s"); err == nil {
		t.Fatal("a plain connection to TLS nodes succeeded")
	}
	m1, m2 := redis.NewMutex(dial(), "tls/x"), redis.NewMutex(dial(), "tls/x")
	l1, err := m1.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := m2.Lock(ctx)
		if err == nil && l2.Token() <= l1.Token() {
			err = fmt.Errorf("token %d after %d", l2.Token(), l1.Token())
		}
		got <- err
	}()
	c := dial()
	_, q := rediskeys.ClusterKeys("tls/x")
	waitQueued(t, c, "", q)
	if err := m1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := m2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
