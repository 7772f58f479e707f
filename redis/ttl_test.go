package redis_test

import (
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// A ttl below MinTTL is refused with ErrInvalidTTL, as zk and etcd refuse
// a session TTL below their minimum, instead of being raised unseen; the
// minimum itself is taken.
func TestTTLBelowMinimum(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	c := dial(t, srv)
	q := quorum(t, []*redistest.Server{srv})
	ctx := within(t, 10*time.Second)
	for _, ttl := range []time.Duration{-time.Second, 0, time.Millisecond, redis.MinTTL - time.Millisecond} {
		if _, err := redis.NewMutex(c, freshKey(t), redis.WithTTL(ttl)).Lock(ctx); !errors.Is(err, baton.ErrInvalidTTL) {
			t.Errorf("Mutex with ttl %v: %v, want ErrInvalidTTL", ttl, err)
		}
		if _, err := redis.NewRedlock(q, freshKey(t), redis.WithTTL(ttl)).TryLock(ctx); !errors.Is(err, baton.ErrInvalidTTL) {
			t.Errorf("Redlock with ttl %v: %v, want ErrInvalidTTL", ttl, err)
		}
	}
	m := redis.NewMutex(c, freshKey(t), redis.WithTTL(redis.MinTTL))
	if _, err := m.Lock(ctx); err != nil {
		t.Fatalf("Mutex with the minimum ttl: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
