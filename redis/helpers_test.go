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

// oneServer starts a Redis server for the test and returns it, a Client
// on it, a ctx that ends after d and a key of the test's own.
func oneServer(t testing.TB, d time.Duration) (*redistest.Server, *redis.Client, context.Context, string) {
	t.Helper()
	srv := redistest.Start(t, redistest.Config{})
	return srv, dial(t, srv), within(t, d), freshKey(t)
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
func renewedPast(t testing.TB, e baton.Expirer, start time.Time, d time.Duration, check func()) {
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
