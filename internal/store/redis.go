package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/redis"
)

// ErrBadReplicas is wrapped by Open's error for Options.Replicas on a
// store that cannot wait for replicas (not a single Redis master).
var ErrBadReplicas = errors.New("bad --replicas")

// quiet drops go-redis's own log lines: the command line reports a failure
// in one line of its own.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var silence sync.Once

// openRedis dials a single Redis server, or a Sentinel-managed master
// (PING checks the credentials).
func openRedis(ctx context.Context, u URL, o Options) (*Store, error) {
	silence.Do(func() { goredis.SetLogger(quiet{}) })
	if o.Replicas > 0 && u.Scheme == Redlock {
		return nil, fmt.Errorf("%w: --replicas needs one master (redis://, redis-sentinel://), not redlock://", ErrBadReplicas)
	}
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
	return newRedisStore(u, o, c, nil), nil
}

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
	return newRedisStore(u, o, nil, q), nil
}

// newRedisStore is the Store of a Redis server's client c or Redlock's
// masters q: o's TTL and telemetry go to each lock it makes.
func newRedisStore(u URL, o Options, c *redis.Client, q *redis.Quorum) *Store {
	k := redisKind{u: u, client: c, quorum: q, lockTTL: o.TTL,
		opts: []redis.Option{redis.WithTTL(o.TTL), redis.WithTelemetry(o.Telemetry)}}
	if o.Replicas > 0 {
		k.opts = append(k.opts, redis.WithReplicas(o.Replicas))
	}
	return &Store{URL: u, kind: k}
}

// redisTLS is the TLS configuration for a rediss:// URL's one host (for
// rediss-sentinel:// and rediss-cluster://, for every host).
func (u URL) redisTLS(f TLSFiles) (*tls.Config, error) {
	if u.IsSentinel() || u.IsRedisCluster() {
		// The first host is a sentinel, not the master, or one node of
		// many: "" checks each connection's certificate against the host
		// it dials.
		return f.Config("")
	}
	host, _, err := net.SplitHostPort(u.Hosts[0])
	if err != nil {
		return nil, err
	}
	return f.Config(host)
}
