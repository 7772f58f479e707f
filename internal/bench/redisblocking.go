package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// RedisBlockingFloor is the least a fair lock runs on one Redis server when
// it keeps no line of its own: its waiters block in BLPOP on the lock's
// wake list, and Redis serves the clients blocked on a key in the order
// they blocked. A Lock is one script that takes the key (SET NX GET PX)
// or marks the holder's value as having waiters (APPEND "+", once per
// holder), then a BLPOP; a release is one script that deletes the key
// (GETDEL) and, if it was marked, makes a fresh grant the holder (INCR,
// SET) and pushes it (RPUSH) to whoever blocked first, who holds the lock
// by that grant. That is 8 commands per contended acquisition, scripts
// counted. Nothing in it can skip a waiter that is stuck, list the
// waiters or say who holds the lock (the holder's value is the grant, not
// its identity), and a grant pushed when nobody waits stays in the list
// for the next waiter: a measuring stick for the contended workload, not
// a lock.
type RedisBlockingFloor struct {
	Addr     string
	Password string
}

const (
	// blockingJoin: take the key, or mark its holder's value. KEYS: lock.
	// ARGV: value, ttl ms. Returns 1 if taken.
	blockingJoin = `local c = redis.call("set", KEYS[1], ARGV[1], "NX", "GET", "PX", ARGV[2])
if not c then return 1 end
if string.byte(c, -1) ~= 43 then redis.call("append", KEYS[1], "+") end
return 0`
	// blockingRelease: release the key if ours, handing a marked one to the
	// first blocked waiter. KEYS: lock, wake list, grant counter. ARGV:
	// value, ttl ms. Returns 1 if it was ours.
	blockingRelease = `local c = redis.call("getdel", KEYS[1])
if c == ARGV[1] then return 1 end
if c ~= ARGV[1] .. "+" then
  if c then redis.call("set", KEYS[1], c, "PX", ARGV[2]) end
  return 0
end
local g = "g" .. redis.call("incr", KEYS[3])
redis.call("set", KEYS[1], g .. "+", "PX", ARGV[2])
redis.call("rpush", KEYS[2], g)
return 1`
)

var (
	blockingJoinScript    = goredis.NewScript(blockingJoin)
	blockingReleaseScript = goredis.NewScript(blockingRelease)
)

// Open connects one client.
func (f RedisBlockingFloor) Open(ctx context.Context) (Client, error) {
	rc := goredis.NewClient(&goredis.Options{Addr: f.Addr, Password: f.Password, ContextTimeoutEnabled: true})
	if err := rc.Ping(ctx).Err(); err != nil {
		_ = rc.Close()
		return nil, err
	}
	c := &redisBlockingClient{rc: rc}
	c.vals.prefix = fmt.Sprintf("blockingfloor:%p", c)
	return c, nil
}

type redisBlockingClient struct {
	rc   *goredis.Client
	vals values
}

// Locker returns a handle.
func (c *redisBlockingClient) Locker(name string) Locker {
	return &redisBlockingLocker{c: c, keys: []string{name, name + ":wake", name + ":grant"}}
}

func (c *redisBlockingClient) Close(context.Context) error { return c.rc.Close() }

type redisBlockingLocker struct {
	c     *redisBlockingClient
	keys  []string
	value string
}

func (l *redisBlockingLocker) Lock(ctx context.Context) error {
	l.value = l.c.vals.next()
	n, err := blockingJoinScript.Run(ctx, l.c.rc, l.keys[:1], l.value, floorTTL.Milliseconds()).Int()
	if err != nil || n == 1 {
		return err
	}
	for ctx.Err() == nil {
		r, err := l.c.rc.BLPop(ctx, time.Second, l.keys[1]).Result()
		switch {
		case errors.Is(err, goredis.Nil):
			continue
		case err != nil:
			if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
				<-ctx.Done() // the read timed out at ctx's deadline
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		case len(r) == 2:
			l.value = r[1]
			return nil
		}
	}
	return ctx.Err()
}

func (l *redisBlockingLocker) Unlock(ctx context.Context) error {
	return blockingReleaseScript.Run(ctx, l.c.rc, l.keys, l.value, floorTTL.Milliseconds()).Err()
}
