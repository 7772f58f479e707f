package bench

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
)

// RedisClusterFloor cycles SET key value NX PX + EVAL (compare-and-delete)
// on a Redis Cluster with go-redis's ClusterClient: the raw operations of
// one unfenced cycle, each sent to the master of the key's slot.
type RedisClusterFloor struct {
	Addrs    []string
	Password string
}

// Open makes one cluster client and reads the slot map.
func (f RedisClusterFloor) Open(ctx context.Context) (Client, error) {
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: f.Addrs, Password: f.Password, ContextTimeoutEnabled: true})
	if err := cc.Ping(ctx).Err(); err != nil {
		_ = cc.Close()
		return nil, err
	}
	return &redisClusterFloorClient{cc: cc}, nil
}

type redisClusterFloorClient struct{ cc *goredis.ClusterClient }

func (c *redisClusterFloorClient) Locker(name string) Locker {
	return &redisClusterFloorLocker{cc: c.cc, key: name}
}

func (c *redisClusterFloorClient) Close(context.Context) error { return c.cc.Close() }

type redisClusterFloorLocker struct {
	cc    *goredis.ClusterClient
	key   string
	value string
	n     int
}

func (l *redisClusterFloorLocker) Lock(ctx context.Context) error {
	l.n++
	l.value = fmt.Sprintf("%p-%d", l, l.n)
	return l.cc.SetArgs(ctx, l.key, l.value, goredis.SetArgs{Mode: "NX", TTL: floorTTL}).Err()
}

func (l *redisClusterFloorLocker) Unlock(ctx context.Context) error {
	return l.cc.Eval(ctx, unlockScript, []string{l.key}, l.value).Err()
}
