package bench

import (
	"context"
	"errors"
	"strconv"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// dialRedis connects one client to each of addrs and pings it; on an
// error it closes those it opened.
func dialRedis(ctx context.Context, addrs []string, password string) ([]*goredis.Client, error) {
	var rcs []*goredis.Client
	for _, a := range addrs {
		rc := goredis.NewClient(&goredis.Options{Addr: a, Password: password, ContextTimeoutEnabled: true})
		rcs = append(rcs, rc)
		if err := rc.Ping(ctx).Err(); err != nil {
			for _, rc := range rcs {
				_ = rc.Close()
			}
			return nil, err
		}
	}
	return rcs, nil
}

// closeRedis closes a client's subscriptions, then its connections, and
// waits for the goroutines (wg) that read the subscriptions to end.
func closeRedis(pss []*goredis.PubSub, rcs []*goredis.Client, wg *sync.WaitGroup) {
	for _, ps := range pss {
		_ = ps.Close()
	}
	for _, rc := range rcs {
		_ = rc.Close()
	}
	wg.Wait()
}

// eachRedis runs f on every server, in parallel when there are several.
func eachRedis(rcs []*goredis.Client, f func(rc *goredis.Client) error) error {
	if len(rcs) == 1 {
		return f(rcs[0])
	}
	errs := make([]error, len(rcs))
	var wg sync.WaitGroup
	for i, rc := range rcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(rc)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// values hands out the lock values of one floor client, "<prefix>|<n>":
// unique, and the prefix (a channel, for the floors that publish) can be
// read back from the value.
type values struct {
	prefix string
	mu     sync.Mutex
	n      int
}

func (v *values) next() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.n++
	return v.prefix + "|" + strconv.Itoa(v.n)
}
