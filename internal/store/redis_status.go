package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/redact"
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
}

// InspectRedis reads lock name on every server of a redis://, rediss:// or
// redlock:// URL, each bounded by o's dial timeout (rediss:// with o's TLS
// files).
func InspectRedis(ctx context.Context, u URL, name string, o Options) ([]RedisLock, error) {
	if !u.isRedis() {
		return nil, fmt.Errorf("%s:// is not a Redis store", u.Scheme)
	}
	if err := u.CheckTLS(o.TLS); err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	dial := o.DialTimeout
	if dial <= 0 {
		dial = DefaultDialTimeout
	}
	silence.Do(func() { goredis.SetLogger(quiet{}) })
	out := make([]RedisLock, len(u.Hosts))
	errs := make([]error, len(u.Hosts))
	var wg sync.WaitGroup
	for i, h := range u.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one := u
			one.Scheme, one.Hosts = Redis, []string{h}
			if u.Scheme == RedisTLS {
				one.Scheme = RedisTLS
			}
			out[i], errs[i] = inspectOne(ctx, one, name, dial, o.TLS)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, e := range errs {
			if errors.Is(e, ErrBadTLS) || errors.Is(e, baton.ErrPermission) {
				return nil, fmt.Errorf("%s: %w", u, e)
			}
		}
		return nil, fmt.Errorf("%w %s: %s", ErrUnreachable, u, redact.Secrets(oneLine(err), u.Password))
	}
	return out, nil
}

func inspectOne(ctx context.Context, u URL, name string, dial time.Duration, f TLSFiles) (RedisLock, error) {
	rl := RedisLock{Server: u.Hosts[0]}
	opt, err := goredis.ParseURL(u.format(false))
	if err != nil {
		return rl, errors.New(redact.Secrets(err.Error(), u.Password))
	}
	if u.TLS {
		if opt.TLSConfig, err = u.redisTLS(f); err != nil {
			return rl, err
		}
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = dial, dial, dial
	opt.MaxRetries, opt.ContextTimeoutEnabled = -1, true
	c := goredis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, dial)
	defer cancel()
	pipe := c.Pipeline()
	get := pipe.Get(ctx, name)
	ttl := pipe.PTTL(ctx, name)
	tok := pipe.Get(ctx, name+":token")
	queue := pipe.ZRange(ctx, name+":queue", 0, -1)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return rl, fmt.Errorf("%s: %w", rl.Server, redis.MapError(err))
	}
	rl.Holder, _ = get.Result()
	rl.Holder = strings.TrimSuffix(rl.Holder, "+")
	if d, err := ttl.Result(); err == nil && d > 0 {
		rl.Left = d
	}
	if s, err := tok.Result(); err == nil {
		rl.Token, _ = strconv.ParseInt(s, 10, 64)
	}
	entries, _ := queue.Result()
	for _, e := range entries {
		v, _, _ := strings.Cut(e, "|")
		rl.Waiters = append(rl.Waiters, v)
	}
	return rl, nil
}
