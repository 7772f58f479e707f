package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// RedisLineFloor is the least a fair lock with fencing tokens runs on one
// Redis server when its line is on the server, as it must be for clients
// in different processes: a Lock is one script that takes the key (SET NX
// PX, INCR for the token) or joins a list (RPUSH); a release is one
// script that deletes the key (GETDEL), pops the next waiter (LPOP), makes
// it the holder with its token (SET, INCR) and tells it alone (PUBLISH).
// That is 3 commands for an uncontended acquisition and 9 for a contended
// one, scripts counted. It keeps none of what makes a line survive
// failures (entries with deadlines, refreshes, the server clock, expiry
// of the line): a measuring stick for the contended workload, not a lock.
type RedisLineFloor struct {
	Addr     string
	Password string
}

const (
	// lineJoin: take the lock with a token, or join the line.
	// KEYS: lock, token, line. ARGV: value, ttl ms. Returns the token, or 0.
	lineJoin = `if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return redis.call("incr", KEYS[2]) end
redis.call("rpush", KEYS[3], ARGV[1]) return 0`
	// lineRelease: release the lock if ours, handing it to the next in line.
	// Values are "<channel>|<n>". KEYS: lock, token, line. ARGV: value, ttl ms.
	lineRelease = `if redis.call("getdel", KEYS[1]) ~= ARGV[1] then return 0 end
local nv = redis.call("lpop", KEYS[3])
if nv then
  redis.call("set", KEYS[1], nv, "PX", ARGV[2])
  local t = redis.call("incr", KEYS[2])
  redis.call("publish", string.match(nv, "^(.*)|"), nv .. " " .. t)
end
return 1`
	// lineLeave: leave the line (a lock handed to us meanwhile is released
	// by Unlock).
	lineLeave = `redis.call("lrem", KEYS[3], 0, ARGV[1]) return 0`
)

var (
	lineJoinScript    = goredis.NewScript(lineJoin)
	lineReleaseScript = goredis.NewScript(lineRelease)
	lineLeaveScript   = goredis.NewScript(lineLeave)
)

// Open connects one client and subscribes its channel.
func (f RedisLineFloor) Open(ctx context.Context) (Client, error) {
	rc := goredis.NewClient(&goredis.Options{Addr: f.Addr, Password: f.Password, ContextTimeoutEnabled: true})
	c := &redisLineClient{rc: rc}
	c.ch = fmt.Sprintf("linefloor:%p", c)
	c.ps = rc.Subscribe(ctx, c.ch)
	if _, err := c.ps.Receive(ctx); err != nil { // the subscription's confirmation
		_ = c.Close(ctx)
		return nil, err
	}
	return c, nil
}

type redisLineClient struct {
	rc *goredis.Client
	ps *goredis.PubSub
	ch string
	mu sync.Mutex
	n  int
}

// Locker returns a handle; a client's handles must not wait at once (they
// share its one subscription, read by the waiter itself).
func (c *redisLineClient) Locker(name string) Locker {
	return &redisLineLocker{c: c, keys: []string{name, name + ":token", name + ":line"}}
}

func (c *redisLineClient) Close(context.Context) error {
	_ = c.ps.Close()
	return c.rc.Close()
}

type redisLineLocker struct {
	c     *redisLineClient
	keys  []string
	value string
}

func (l *redisLineLocker) Lock(ctx context.Context) error {
	l.c.mu.Lock()
	l.c.n++
	l.value = l.c.ch + "|" + strconv.Itoa(l.c.n)
	l.c.mu.Unlock()
	tok, err := lineJoinScript.Run(ctx, l.c.rc, l.keys, l.value, floorTTL.Milliseconds()).Int64()
	if err != nil || tok != 0 {
		return err
	}
	for {
		m, err := l.c.ps.ReceiveMessage(ctx)
		if err != nil {
			if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
				<-ctx.Done() // the read timed out at ctx's deadline
			}
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = lineLeaveScript.Run(uctx, l.c.rc, l.keys, l.value).Err()
			_ = l.Unlock(uctx) // in case it was handed to us meanwhile
			return err
		}
		if v, _, ok := strings.Cut(m.Payload, " "); ok && v == l.value {
			return nil
		}
	}
}

func (l *redisLineLocker) Unlock(ctx context.Context) error {
	return lineReleaseScript.Run(ctx, l.c.rc, l.keys, l.value, floorTTL.Milliseconds()).Err()
}
