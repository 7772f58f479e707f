package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/redact"
	"github.com/batonhq/baton/internal/rediskeys"
	"github.com/batonhq/baton/redis"
)

// dialCluster makes the inspector's cluster client (no I/O): the URL's
// hosts are seed nodes, the others are found.
func (in *RedisInspector) dialCluster(o Options) error {
	opt := &goredis.ClusterOptions{
		Addrs: in.u.Hosts, Username: in.u.User, Password: in.u.Password,
		DialTimeout: in.dial, ReadTimeout: in.dial, WriteTimeout: in.dial,
		MaxRetries: -1, ContextTimeoutEnabled: true,
	}
	if in.u.TLS {
		cfg, err := in.u.redisTLS(o.TLS)
		if err != nil {
			return fmt.Errorf("%s: %w", in.u, err)
		}
		opt.TLSConfig = cfg
	}
	in.cluster = goredis.NewClusterClient(opt)
	return nil
}

// clusterErr is err as Inspect and Names report it.
func (in *RedisInspector) clusterErr(err error) error {
	err = redis.MapError(err)
	if errors.Is(err, ErrBadTLS) || errors.Is(err, baton.ErrPermission) {
		return fmt.Errorf("%s: %w", in.u, err)
	}
	return fmt.Errorf("%w %s: %s", ErrUnreachable, in.u, redact.Secrets(oneLine(err), in.u.Password))
}

// masters are the cluster's masters now (none if it cannot be read).
func (in *RedisInspector) masters() []*goredis.Client {
	ctx, cancel := context.WithTimeout(context.Background(), in.dial)
	defer cancel()
	var mu sync.Mutex
	var out []*goredis.Client
	_ = in.cluster.ForEachMaster(ctx, func(_ context.Context, c *goredis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, c)
		return nil
	})
	return out
}

// inspectCluster reads lock name on the master of its slot: one
// RedisLock, its Server that master.
func (in *RedisInspector) inspectCluster(ctx context.Context, name string) ([]RedisLock, error) {
	ctx, cancel := context.WithTimeout(ctx, in.dial)
	defer cancel()
	m, err := in.cluster.MasterForKey(ctx, name)
	if err != nil {
		return nil, in.clusterErr(err)
	}
	tok, q := rediskeys.ClusterKeys(name)
	rl, err := inspectOne(ctx, in.cluster, m.Options().Addr, name, tok, q)
	if err != nil {
		return nil, in.clusterErr(err)
	}
	return []RedisLock{rl}, nil
}

// namesCluster is Names on a Redis Cluster: every master is scanned for
// the lock keys under prefix and for the token counters and lines of the
// names under prefix ({NAME}:token, {NAME}:queue; a name with a brace
// in it is found by its own key, while held).
func (in *RedisInspector) namesCluster(ctx context.Context, prefix string, limit int) ([]string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, in.dial)
	defer cancel()
	var mu sync.Mutex
	set := map[string]bool{}
	over := false
	patterns := []string{EscapeGlob(prefix) + "*"}
	if prefix != "" {
		patterns = append(patterns, EscapeGlob("{"+prefix)+"*")
	}
	err := in.cluster.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		for _, pat := range patterns {
			var cursor uint64
			for {
				keys, next, err := c.Scan(ctx, cursor, pat, 1000).Result()
				if err != nil {
					return err
				}
				var plain []string
				for _, k := range keys {
					if n, ok := rediskeys.ClusterName(k); ok {
						if strings.HasPrefix(n, prefix) {
							mu.Lock()
							set[n] = true
							mu.Unlock()
						}
					} else if strings.HasPrefix(k, prefix) {
						plain = append(plain, k)
					}
				}
				if len(plain) > 0 {
					pipe := c.Pipeline()
					gets := make([]*goredis.StringCmd, len(plain))
					for j, k := range plain {
						gets[j] = pipe.Get(ctx, k)
					}
					_, _ = pipe.Exec(ctx) // a key of another type, or gone: not a lock
					for j, g := range gets {
						if v, err := g.Result(); err == nil && BatonValue(strings.TrimSuffix(v, "+")) {
							mu.Lock()
							set[plain[j]] = true
							mu.Unlock()
						}
					}
				}
				mu.Lock()
				full := len(set) > limit
				over = over || full
				mu.Unlock()
				if full {
					return nil
				}
				if cursor = next; cursor == 0 {
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, in.clusterErr(err)
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	slices.Sort(names)
	if len(names) > limit {
		names, over = names[:limit], true
	}
	return names, over, nil
}
