package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/redact"
	"github.com/batonhq/baton/internal/rediskeys"
	"github.com/batonhq/baton/redis"
)

// RedisLock is what one Redis server says about a lock named K (the key
// layout of package redis: K, K:token, K:queue).
type RedisLock struct {
	// Server is the server's host:port.
	Server string
	// Holder is the holder's random value ("" when free; without the "+"
	// a waiter appends to mark a line), Left its remaining ttl and Token
	// the latest fencing token granted.
	Holder string
	Left   time.Duration
	Token  int64
	// Waiters are the waiters' values in line order (from the entries
	// "<value>|<deadline>|<ttl>|<channel>" of K:queue).
	Waiters []string
	// Queue is the key of the line read: K:queue, or {K}:queue on a
	// Redis Cluster ("" in a RedisLock made by hand: see LineKey).
	Queue string
}

// LineKey is the key of the line of lock key: l.Queue, or key:queue
// when l does not say.
func (l RedisLock) LineKey(key string) string {
	if l.Queue != "" {
		return l.Queue
	}
	return key + rediskeys.Queue
}

// InspectRedis reads lock name (its key, redis.KeyOf) on every server of
// a redis://, rediss:// or redlock:// URL, each bounded by o's dial
// timeout (rediss:// with o's TLS files).
func InspectRedis(ctx context.Context, u URL, name string, o Options) ([]RedisLock, error) {
	in, err := NewRedisInspector(u, o)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	return in.Inspect(ctx, name)
}

// RedisInspector reads baton's Redis locks on every server of a URL, over
// one client per server kept until Close.
type RedisInspector struct {
	u       URL
	dial    time.Duration
	clients []*goredis.Client      // one per u.Hosts
	cluster *goredis.ClusterClient // a Redis Cluster's, instead of clients
}

// NewRedisInspector returns an inspector of the servers of a redis://,
// rediss:// or redlock:// URL. It does no I/O.
func NewRedisInspector(u URL, o Options) (*RedisInspector, error) {
	if !u.isRedis() {
		return nil, fmt.Errorf("%s:// is not a Redis store", u.Scheme)
	}
	if err := u.CheckTLS(o.TLS); err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	in := &RedisInspector{u: u, dial: o.DialTimeout}
	if in.dial <= 0 {
		in.dial = DefaultDialTimeout
	}
	silence.Do(func() { goredis.SetLogger(quiet{}) })
	if u.IsSentinel() {
		return in.sentinel(o)
	}
	if u.IsRedisCluster() {
		return in, in.dialCluster(o)
	}
	for _, h := range u.Hosts {
		one := u
		one.Scheme, one.Hosts = Redis, []string{h}
		if u.Scheme == RedisTLS {
			one.Scheme = RedisTLS
		}
		opt, err := goredis.ParseURL(one.format(false))
		if err != nil {
			in.Close()
			return nil, errors.New(redact.Secrets(err.Error(), u.Password))
		}
		if u.TLS {
			if opt.TLSConfig, err = one.redisTLS(o.TLS); err != nil {
				in.Close()
				return nil, fmt.Errorf("%s: %w", u, err)
			}
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = in.dial, in.dial, in.dial
		opt.MaxRetries, opt.ContextTimeoutEnabled = -1, true
		in.clients = append(in.clients, goredis.NewClient(opt))
	}
	return in, nil
}

// sentinel makes the inspector's one client: on the master the sentinels
// name, followed through failovers.
func (in *RedisInspector) sentinel(o Options) (*RedisInspector, error) {
	opt, err := redis.FailoverOptions(in.u.format(false))
	if err != nil {
		return nil, errors.New(redact.Secrets(err.Error(), in.u.Password, in.u.SentinelPassword))
	}
	if in.u.TLS {
		if opt.TLSConfig, err = in.u.redisTLS(o.TLS); err != nil {
			return nil, fmt.Errorf("%s: %w", in.u, err)
		}
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = in.dial, in.dial, in.dial
	in.clients = []*goredis.Client{goredis.NewFailoverClient(opt)}
	in.u.Hosts = []string{"master " + in.u.Master} // what errors name
	return in, nil
}

// Close closes the clients.
func (in *RedisInspector) Close() {
	if in.cluster != nil {
		_ = in.cluster.Close()
	}
	for _, c := range in.clients {
		_ = c.Close()
	}
}

// Clients are the inspector's clients, one per server in URL order (on
// a Redis Cluster, one per master, as the cluster says now).
func (in *RedisInspector) Clients() []*goredis.Client {
	if in.cluster != nil {
		return in.masters()
	}
	return in.clients
}

// each runs f on every server at once and joins the errors as
// InspectRedis reports them (on a Redis Cluster, on every master, i 0).
func (in *RedisInspector) each(ctx context.Context, f func(ctx context.Context, i int, c *goredis.Client) error) error {
	if in.cluster != nil {
		cctx, cancel := context.WithTimeout(ctx, in.dial)
		defer cancel()
		err := in.cluster.ForEachMaster(cctx, func(ctx context.Context, c *goredis.Client) error { return f(ctx, 0, c) })
		if err != nil {
			return in.clusterErr(err)
		}
		return nil
	}
	errs := make([]error, len(in.clients))
	var wg sync.WaitGroup
	for i, c := range in.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, in.dial)
			defer cancel()
			if err := f(cctx, i, c); err != nil {
				errs[i] = fmt.Errorf("%s: %w", in.u.Hosts[i], redis.MapError(err))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, e := range errs {
			if errors.Is(e, ErrBadTLS) || errors.Is(e, baton.ErrPermission) {
				return fmt.Errorf("%s: %w", in.u, e)
			}
		}
		return fmt.Errorf("%w %s: %s", ErrUnreachable, in.u, redact.Secrets(oneLine(err), in.u.Password))
	}
	return nil
}

// Inspect reads lock name (its key, redis.KeyOf) on every server.
func (in *RedisInspector) Inspect(ctx context.Context, name string) ([]RedisLock, error) {
	name = redis.KeyOf(name) // the lock's key, as the lock uses it
	if in.cluster != nil {
		return in.inspectCluster(ctx, name)
	}
	out := make([]RedisLock, len(in.clients))
	err := in.each(ctx, func(ctx context.Context, i int, c *goredis.Client) error {
		var err error
		out[i], err = inspectOne(ctx, c, in.u.Hosts[i], name, name+rediskeys.Token, name+rediskeys.Queue)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Names lists the names of baton's locks whose keys start with prefix on
// any server, sorted, at most limit (more says some were left out): a lock
// K has K:token once a Mutex has taken it, K:queue while someone waits,
// and K holds a baton value (32 hex digits) while held (a Redlock keeps
// no K:token). Each SCAN batch's other keys are read in one pipeline.
func (in *RedisInspector) Names(ctx context.Context, prefix string, limit int) (names []string, more bool, err error) {
	if in.cluster != nil {
		return in.namesCluster(ctx, prefix, limit)
	}
	sets := make([]map[string]bool, len(in.clients))
	over := make([]bool, len(in.clients))
	err = in.each(ctx, func(ctx context.Context, i int, c *goredis.Client) error {
		sets[i] = map[string]bool{}
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, EscapeGlob(prefix)+"*", 1000).Result()
			if err != nil {
				return err
			}
			var plain []string
			for _, k := range keys {
				switch {
				case strings.HasSuffix(k, rediskeys.Token), strings.HasSuffix(k, rediskeys.Queue):
					sets[i][k[:strings.LastIndexByte(k, ':')]] = true
				case !strings.HasSuffix(k, ":waiting") && !strings.HasSuffix(k, ":release"):
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
						sets[i][plain[j]] = true
					}
				}
			}
			if len(sets[i]) > limit {
				over[i] = true
				return nil
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	})
	if err != nil {
		return nil, false, err
	}
	all := map[string]bool{}
	for i, set := range sets {
		more = more || over[i]
		for k := range set {
			all[k] = true
		}
	}
	for k := range all {
		names = append(names, k)
	}
	slices.Sort(names)
	if len(names) > limit {
		names, more = names[:limit], true
	}
	return names, more, nil
}

// BatonValue says whether v is a holder value of package redis: 32
// lowercase hex digits, alone or before "." and the holder's identity
// (redis.WithIdentity, read by redis.ParseValue).
func BatonValue(v string) bool {
	h, _, _ := strings.Cut(v, ".")
	return len(h) == 32 && strings.Trim(h, "0123456789abcdef") == ""
}

// EscapeGlob escapes the characters SCAN's MATCH pattern gives a meaning.
func EscapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// inspectOne reads the lock name, whose token counter and line are the
// keys token and queue, on one server (or the cluster's master of its
// slot).
func inspectOne(ctx context.Context, c goredis.Cmdable, server, name, token, queue string) (RedisLock, error) {
	rl := RedisLock{Server: server, Queue: queue}
	pipe := c.Pipeline()
	get := pipe.Get(ctx, name)
	ttl := pipe.PTTL(ctx, name)
	tok := pipe.Get(ctx, token)
	line := pipe.ZRange(ctx, queue, 0, -1)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return rl, err
	}
	rl.Holder, _ = get.Result()
	rl.Holder = strings.TrimSuffix(rl.Holder, "+")
	if d, err := ttl.Result(); err == nil && d > 0 {
		rl.Left = d
	}
	if s, err := tok.Result(); err == nil {
		rl.Token, _ = strconv.ParseInt(s, 10, 64)
	}
	entries, _ := line.Result()
	for _, e := range entries {
		v, _, _ := strings.Cut(e, "|")
		rl.Waiters = append(rl.Waiters, v)
	}
	return rl, nil
}
