package redis_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// rediss-sentinel://: the master, its replica and the sentinels accept
// only TLS; the CA comes from the URL's ca_file. The URL names the
// sentinels as localhost and they announce the master as 127.0.0.1,
// whose certificate names only that address: each connection must check
// the host it dials, not the first sentinel's. A waiter is handed the
// lock over the TLS connections.
func TestSentinelTLS(t *testing.T) {
	t.Parallel() // with the other Sentinel tests, each on its own servers
	const ttl = 2 * time.Second
	tp := redistest.StartTLSSentinel(t, 1, 2)
	for _, s := range tp.Servers {
		s.WaitUp(ttl)
	}
	ctx := within(t, 30*time.Second)
	url := strings.ReplaceAll(tp.URL(), "127.0.0.1:", "localhost:") + "?ca_file=" + tp.CAFile()
	if !strings.HasPrefix(url, "rediss-sentinel://localhost:") {
		t.Fatalf("URL %s", url)
	}
	if _, err := redis.Dial(ctx, strings.Replace(tp.URL(), "rediss-sentinel", "redis-sentinel", 1)+"?dial_timeout=1s"); err == nil {
		t.Fatal("a plain connection to TLS sentinels succeeded")
	}
	if _, err := redis.Dial(ctx, strings.Replace(url, "ca_file=", "dial_timeout=1s&ca_file=", 1)+".nosuch"); err == nil {
		t.Fatal("Dial with a missing ca_file succeeded")
	}
	c1, c2 := dialURL(t, ctx, url), dialURL(t, ctx, url)
	key := freshKey(t)
	m1 := redis.NewMutex(c1, key, redis.WithTTL(ttl), redis.WithReplicas(1))
	m2 := redis.NewMutex(c2, key, redis.WithTTL(ttl), redis.WithReplicas(1))
	l1, err := m1.Lock(ctx)
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := m2.Lock(ctx)
		if err == nil && l2.Token() <= l1.Token() {
			err = fmt.Errorf("token %d after %d", l2.Token(), l1.Token())
		}
		got <- err
	}()
	waitQueued(t, c1, "", key+":queue")
	if err := m1.Unlock(ctx); err != nil {
		t.Fatalf("holder's Unlock: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if err := m2.Unlock(ctx); err != nil {
		t.Fatalf("waiter's Unlock: %v", err)
	}
}
