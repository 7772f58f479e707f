package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// Locker is what both Redis locks offer.
type locker interface {
	Lock(ctx context.Context) (*baton.Lease, error)
	Unlock(ctx context.Context) error
}

// WithIdentity: the holder's value and the waiter's entry carry who they
// are (ParseValue), through the line's marking and the release's hand-off,
// on Mutex and Redlock; a lock without it still shares the line.
func TestIdentityInValue(t *testing.T) {
	for _, kind := range []string{"mutex", "redlock"} {
		t.Run(kind, func(t *testing.T) {
			srvs := redistest.StartN(t, 3, redistest.Config{})
			c := dial(t, srvs[0])
			ctx := within(t, 30*time.Second)
			key := freshKey(t)
			newLock := func(opts ...redis.Option) locker {
				opts = append(opts, redis.WithTTL(3*time.Second))
				if kind == "mutex" {
					return redis.NewMutex(dial(t, srvs[0]), key, opts...)
				}
				return redis.NewRedlock(quorum(t, srvs), key, opts...)
			}
			a := newLock(redis.WithIdentity(baton.Identity{Host: "ha", PID: 1, Cmd: "holder"}))
			b := newLock(redis.WithIdentity(baton.Identity{Host: "hb", PID: 2, Cmd: "waiter"}))
			plain := newLock()
			if _, err := a.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 2)
			go func() {
				_, err := b.Lock(ctx)
				got <- err
			}()
			queued(t, c, key, 1)
			go func() {
				_, err := plain.Lock(ctx)
				got <- err
			}()
			queued(t, c, key, 2)
			v := c.Redis().Get(ctx, key).Val()
			if id, ok := redis.ParseValue(v); !ok || id.Host != "ha" || id.PID != 1 || id.Cmd != "holder" || id.TTL != 3*time.Second || id.Created.IsZero() {
				t.Fatalf("holder's value %q: %+v %v", v, id, ok)
			}
			if !strings.HasSuffix(v, "+") {
				t.Fatalf("holder's value %q not marked for a hand-off with waiters in line", v)
			}
			entries := c.Redis().ZRange(ctx, key+":queue", 0, -1).Val()
			w, _, _ := strings.Cut(entries[0], "|")
			if id, ok := redis.ParseValue(w); !ok || id.Host != "hb" || id.PID != 2 {
				t.Fatalf("waiter's entry %q: %+v %v", entries[0], id, ok)
			}
			if _, ok := redis.ParseValue(strings.SplitN(entries[1], "|", 2)[0]); ok {
				t.Fatalf("a plain lock's entry %q parsed as an identity", entries[1])
			}
			if err := a.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatal(err)
			}
			v = c.Redis().Get(ctx, key).Val()
			if id, ok := redis.ParseValue(v); !ok || id.Host != "hb" {
				t.Fatalf("value after the hand-off %q: %+v %v", v, id, ok)
			}
			if err := b.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatal(err)
			}
			if _, ok := redis.ParseValue(c.Redis().Get(ctx, key).Val()); ok {
				t.Fatal("a plain lock's value parsed as an identity")
			}
			if err := plain.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
