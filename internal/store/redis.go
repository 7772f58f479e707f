package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/redis"
	goredis "github.com/redis/go-redis/v9"
)

// quiet drops go-redis's own log lines: the command line reports a failure
// in one line of its own.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var silence sync.Once

// openRedis dials a single Redis server (PING checks the credentials).
func openRedis(ctx context.Context, u URL, o Options) (*Store, error) {
	if u.Scheme == Redlock {
		return nil, fmt.Errorf("%w yet: redlock", ErrUnavailable)
	}
	silence.Do(func() { goredis.SetLogger(quiet{}) })
	c, err := redis.Dial(ctx, u.format(false))
	if err != nil {
		return nil, err
	}
	return &Store{URL: u, Locker: &redisLocker{c: c, ttl: o.TTL}}, nil
}

// redisLocker takes single-instance Redis locks.
type redisLocker struct {
	c   *redis.Client
	ttl time.Duration
}

func (l *redisLocker) Lock(ctx context.Context, name string) (Unlocker, error) {
	m := redis.NewMutex(l.c, name, redis.WithTTL(l.ttl))
	lease, err := m.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return redisHold{m: m, l: lease}, nil
}

func (l *redisLocker) Close() error { return l.c.Close() }

type redisHold struct {
	m *redis.Mutex
	l *baton.Lease
}

func (h redisHold) Lease() *baton.Lease              { return h.l }
func (h redisHold) Unlock(ctx context.Context) error { return h.m.Unlock(ctx) }
