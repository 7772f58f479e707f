package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/redis"
)

// A lock name is its key as written, as redsync's: "nightly-report" and
// "/nightly-report" are two keys (baton.CleanName's rule).
func TestKeyOfName(t *testing.T) {
	for _, name := range []string{"nightly-report", "/nightly-report", "/jobs/x", "jobs/x", "a:b"} {
		if got := redis.NewMutex(nil, name).Key(); got != name {
			t.Errorf("NewMutex(%q).Key() = %q, want it as written", name, got)
		}
		if got := redis.NewRedlock(nil, name).Key(); got != name {
			t.Errorf("NewRedlock(%q).Key() = %q, want it as written", name, got)
		}
	}
}

// A lock with a bad name fails before any command is sent: the client's
// server is never dialed.
func TestLockRejectsBadKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	defer rc.Close() // NewClient does not take rc over
	c := redis.NewClient(rc)
	defer c.Close()
	if _, err := redis.NewMutex(c, "build:token").Lock(ctx); !errors.Is(err, baton.ErrInvalidName) {
		t.Errorf("mutex: %v, want ErrInvalidName", err)
	}
	if _, err := redis.NewRedlock(redis.NewQuorum(c), "a\nb").TryLock(ctx); !errors.Is(err, baton.ErrInvalidName) {
		t.Errorf("redlock: %v, want ErrInvalidName", err)
	}
}
