package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// sentinelTTL is the lock ttl of the Sentinel tests: short, so that a
// topology started for a test is trusted by the restart guard soon, and a
// failover outlasts it.
const sentinelTTL = 4 * time.Second

// startSentinel starts a master, two replicas and three sentinels, up for
// sentinelTTL (see redistest.Server.WaitUp).
func startSentinel(t *testing.T) *redistest.Topology {
	t.Helper()
	tp := redistest.StartSentinel(t, 2, 3)
	for _, s := range tp.Servers {
		s.WaitUp(sentinelTTL)
	}
	return tp
}

// dialURL dials url and closes the client when the test ends.
func dialURL(t testing.TB, ctx context.Context, url string) *redis.Client {
	t.Helper()
	c, err := redis.Dial(ctx, url)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestSentinelDial(t *testing.T) {
	t.Parallel() // with the other Sentinel tests, each on its own servers
	tp := startSentinel(t)
	ctx := within(t, 30*time.Second)
	c := dialURL(t, ctx, tp.URL())
	if got := c.String(); got != tp.URL() {
		t.Errorf("String() = %q, want %q", got, tp.URL())
	}
	m := redis.NewMutex(c, freshKey(t), redis.WithTTL(sentinelTTL), redis.WithReplicas(2))
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if l.Token() == 0 {
		t.Errorf("token 0")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	// A hand-off under WithReplicas: the waiter holds once its own
	// renewal, after the grant, is acknowledged.
	other := dialURL(t, ctx, tp.URL())
	key := freshKey(t)
	h := redis.NewMutex(c, key, redis.WithTTL(sentinelTTL), redis.WithReplicas(2))
	w := redis.NewMutex(other, key, redis.WithTTL(sentinelTTL), redis.WithReplicas(2))
	hl, err := h.Lock(ctx)
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	got := make(chan *baton.Lease, 1)
	go func() {
		l, err := w.Lock(ctx)
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- l
	}()
	await.Until(t, 10*time.Second, "the waiter in line", func() bool {
		return c.Redis().ZCard(ctx, key+":queue").Val() == 1
	})
	if err := h.Unlock(ctx); err != nil {
		t.Fatalf("holder's Unlock: %v", err)
	}
	if wl := <-got; wl == nil || wl.Token() <= hl.Token() {
		t.Fatalf("waiter's lease %v after the holder's token %d", wl, hl.Token())
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatalf("waiter's Unlock: %v", err)
	}

	// More replicas than there are: never acknowledged.
	m3 := redis.NewMutex(c, freshKey(t), redis.WithTTL(sentinelTTL), redis.WithReplicas(3))
	if _, err := m3.TryLock(ctx); !errors.Is(err, redis.ErrNotAcknowledged) {
		t.Fatalf("TryLock with 3 of 2 replicas: %v, want ErrNotAcknowledged", err)
	}
	lctx, cancel := context.WithTimeout(ctx, sentinelTTL)
	defer cancel()
	if _, err := m3.Lock(lctx); !errors.Is(err, redis.ErrNotAcknowledged) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with 3 of 2 replicas: %v, want ErrNotAcknowledged and DeadlineExceeded", err)
	}
	// The give-back left the lock free.
	if _, err := redis.NewMutex(c, m3.Key(), redis.WithTTL(sentinelTTL)).TryLock(ctx); err != nil {
		t.Fatalf("TryLock after the unacknowledged ones: %v", err)
	}

	for _, tc := range []struct{ url, want string }{
		{strings.TrimSuffix(tp.URL(), "/"+redistest.MasterName), "no master name"},
		{strings.TrimSuffix(tp.URL(), redistest.MasterName) + "nosuch", `sentinel 127.0.0.1`},
	} {
		_, err := redis.Dial(ctx, tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Dial(%s) = %v, want an error saying %q", tc.url, err, tc.want)
		}
	}
	_, err = redis.Dial(ctx, strings.TrimSuffix(tp.URL(), redistest.MasterName)+"nosuch")
	if !errors.Is(err, redis.ErrNoMaster) {
		t.Errorf("unknown master: %v, want ErrNoMaster", err)
	}
	t.Logf("unknown master: %v", err)
}
