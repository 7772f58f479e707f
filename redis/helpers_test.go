package redis_test

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

var keySeq atomic.Int64

// freshKey returns a key no other test uses.
func freshKey(t testing.TB) string {
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return fmt.Sprintf("baton-test:%s:%d", name, keySeq.Add(1))
}

// dial connects to srv and closes the client when the test ends.
func dial(t testing.TB, srv *redistest.Server) *redis.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redis.Dial(ctx, srv.URL())
	if err != nil {
		t.Fatalf("dial %s: %v", srv.URL(), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// oneServer returns the package's shared Redis server, a Client on it,
// a ctx that ends after d and a key of the test's own. The server has
// been up for baton.DefaultTTL, so the restart guard holds back no lock
// of that ttl or less; a test must not kill or restart it.
func oneServer(t testing.TB, d time.Duration) (*redistest.Server, *redis.Client, context.Context, string) {
	t.Helper()
	srv := sharedServer(t)
	return srv, dial(t, srv), within(t, d), freshKey(t)
}

// sharedServer is the package's shared server, up for baton.DefaultTTL
// (the first call waits for it). Tests on it use keys of their own, and
// run one at a time, so that those counting its commands count their own.
func sharedServer(t testing.TB) *redistest.Server {
	t.Helper()
	srv := redistest.Shared(t, "redis", 1)[0]
	srv.WaitUp(baton.DefaultTTL)
	return srv
}

// settled waits until the restart guard lets c lock with ttl: on a server
// up for less than a ttl it holds every lock back (see
// redis.Client.RestartGuard). Tests that time a lock's life start after it.
func settled(t testing.TB, c *redis.Client, ttl time.Duration) {
	t.Helper()
	await.Until(t, ttl+10*time.Second, "the restart guard to let locks be granted", func() bool { return c.RestartGuard(ttl) == nil })
}

// within returns a context that ends after d, cancelled when the test ends.
func within(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitDone waits for a lease to end, failing the test after d.
func waitDone(t testing.TB, l *baton.Lease, d time.Duration) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(d):
		t.Fatalf("lease on %s still live after %v", l.Key(), d)
	}
}

// wakeChannels waits until n wake channels are subscribed on c's server.
// A Client subscribes its own on its first Lock without waiting for the
// server (the connection, its HELLO and the SUBSCRIBE run in the
// background), so a command count taken just after that Lock could
// include them.
func wakeChannels(t testing.TB, ctx context.Context, c *redis.Client, n int) {
	t.Helper()
	await.Until(t, 10*time.Second, fmt.Sprintf("%d wake channels subscribed", n), func() bool {
		chs, err := c.Redis().PubSubChannels(ctx, "baton:wake:*").Result()
		return err == nil && len(chs) == n
	})
}

// renewedPast waits until e's hold has been renewed to expire later than
// start+d (its renewals confirmed, however long that takes), checking
// check between polls, and fails the test if that takes longer than 4d.
func renewedPast(t testing.TB, e backend.Expirer, start time.Time, d time.Duration, check func()) {
	t.Helper()
	await.Until(t, 4*d, fmt.Sprintf("the hold renewed past %v", d), func() bool {
		check()
		return e.Expiry().After(start.Add(d))
	})
}

func mustLost(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, baton.ErrLost) {
		t.Fatalf("want an error wrapping baton.ErrLost, got %v", err)
	}
}

// goroutinesCreated is how many goroutines the process has started.
func goroutinesCreated() uint64 {
	m := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}
