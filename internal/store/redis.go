package store

import (
	"context"
	"crypto/tls"
	"net"
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
	silence.Do(func() { goredis.SetLogger(quiet{}) })
	if u.Scheme == Redlock {
		return openRedlock(ctx, u, o)
	}
	var opts []redis.DialOption
	if u.TLS {
		cfg, err := u.redisTLS(o.TLS)
		if err != nil {
			return nil, err
		}
		opts = append(opts, redis.WithTLSConfig(cfg))
	}
	c, err := redis.Dial(ctx, u.format(false), opts...)
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
func (h redisHold) Expiry() time.Time                { return h.m.Expiry() }

// openRedlock dials every master of a redlock:// URL (a majority must
// answer).
func openRedlock(ctx context.Context, u URL, o Options) (*Store, error) {
	urls := make([]string, len(u.Hosts))
	for i, h := range u.Hosts {
		one := u
		one.Scheme, one.Hosts = Redis, []string{h}
		urls[i] = one.format(false)
	}
	q, err := redis.DialRedlock(ctx, urls)
	if err != nil {
		return nil, err
	}
	return &Store{URL: u, Locker: &redlockLocker{q: q, ttl: o.TTL}}, nil
}

// redlockLocker takes Redlocks over a quorum of masters.
type redlockLocker struct {
	q   *redis.Quorum
	ttl time.Duration
}

func (l *redlockLocker) Lock(ctx context.Context, name string) (Unlocker, error) {
	r := redis.NewRedlock(l.q, name, redis.WithTTL(l.ttl))
	lease, err := r.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return redlockHold{r: r, l: lease}, nil
}

func (l *redlockLocker) Close() error { return l.q.Close() }

type redlockHold struct {
	r *redis.Redlock
	l *baton.Lease
}

func (h redlockHold) Lease() *baton.Lease              { return h.l }
func (h redlockHold) Unlock(ctx context.Context) error { return h.r.Unlock(ctx) }
func (h redlockHold) Expiry() time.Time                { return h.r.Expiry() }

// redisTLS is the TLS configuration for a rediss:// URL's one host.
func (u URL) redisTLS(f TLSFiles) (*tls.Config, error) {
	host, _, err := net.SplitHostPort(u.Hosts[0])
	if err != nil {
		return nil, err
	}
	return f.Config(host)
}
