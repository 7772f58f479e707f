package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/internal/rediskeys"
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
//
// With Deadlines it is the least a lock built as issue #14 directs runs:
// the line's entries carry a deadline in the server's clock and a release
// skips expired ones, so a waiter that died does not hold up the line.
// The join reads the server's time (TIME) and adds the waiter to a sorted
// set scored by its deadline in µs (ZADD), which orders it by the time of
// joining as long as entries live alike; the release pops the first entry
// (ZPOPMIN), reads the time and hands the lock to it if its deadline has
// not passed. That is 11 commands per contended acquisition, with none
// of what baton adds on top (entry refreshes that keep a waiter's place,
// the line's expiry, the holder's remaining ttl, the mark that keeps
// redsync's holders' values intact).
type RedisLineFloor struct {
	Addr      string
	Password  string
	Deadlines bool
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

// The scripts with Deadlines: the line is a sorted set of values scored
// by their deadlines, server µs.
const (
	// deadlineJoin: take the lock with a token, or join the line with a
	// deadline. KEYS: lock, token, line. ARGV: value, ttl ms, entry life
	// ms. Returns the token, or 0.
	deadlineJoin = `if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return redis.call("incr", KEYS[2]) end
local t = redis.call("time")
redis.call("zadd", KEYS[3], tonumber(t[1]) * 1000000 + tonumber(t[2]) + tonumber(ARGV[3]) * 1000, ARGV[1])
return 0`
	// deadlineRelease: release the lock if ours, handing it to the first
	// live entry in line. KEYS: lock, token, line. ARGV: value, ttl ms.
	deadlineRelease = `if redis.call("getdel", KEYS[1]) ~= ARGV[1] then return 0 end
local now
for _ = 1, 1000 do
  local e = redis.call("zpopmin", KEYS[3])
  if #e == 0 then break end
  if not now then
    local t = redis.call("time")
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  if tonumber(e[2]) >= now then
    redis.call("set", KEYS[1], e[1], "PX", ARGV[2])
    local t = redis.call("incr", KEYS[2])
    redis.call("publish", string.match(e[1], "^(.*)|"), e[1] .. " " .. t)
    return 1
  end
end
return 1`
	// deadlineLeave: leave the line. KEYS: lock, token, line. ARGV: value.
	deadlineLeave = `redis.call("zrem", KEYS[3], ARGV[1]) return 0`
)

var (
	lineJoinScript        = goredis.NewScript(lineJoin)
	lineReleaseScript     = goredis.NewScript(lineRelease)
	lineLeaveScript       = goredis.NewScript(lineLeave)
	deadlineJoinScript    = goredis.NewScript(deadlineJoin)
	deadlineReleaseScript = goredis.NewScript(deadlineRelease)
	deadlineLeaveScript   = goredis.NewScript(deadlineLeave)
)

// Open connects one client and subscribes its channel.
func (f RedisLineFloor) Open(ctx context.Context) (Client, error) {
	rc := goredis.NewClient(&goredis.Options{Addr: f.Addr, Password: f.Password, ContextTimeoutEnabled: true})
	c := &redisLineClient{rc: rc, deadlines: f.Deadlines}
	c.ch = fmt.Sprintf("linefloor:%p", c)
	c.vals.prefix = c.ch
	c.ps = rc.Subscribe(ctx, c.ch)
	if _, err := c.ps.Receive(ctx); err != nil { // the subscription's confirmation
		_ = c.Close(ctx)
		return nil, err
	}
	return c, nil
}

type redisLineClient struct {
	rc        *goredis.Client
	ps        *goredis.PubSub
	ch        string
	deadlines bool
	vals      values
}

// Locker returns a handle; a client's handles must not wait at once (they
// share its one subscription, read by the waiter itself).
func (c *redisLineClient) Locker(name string) Locker {
	return &redisLineLocker{c: c, keys: []string{name, name + rediskeys.Token, name + ":line"}}
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
	l.value = l.c.vals.next()
	join, leave := lineJoinScript, lineLeaveScript
	if l.c.deadlines {
		join, leave = deadlineJoinScript, deadlineLeaveScript
	}
	tok, err := join.Run(ctx, l.c.rc, l.keys, l.value, floorTTL.Milliseconds(), floorTTL.Milliseconds()).Int64()
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
			_ = leave.Run(uctx, l.c.rc, l.keys, l.value).Err()
			_ = l.Unlock(uctx) // in case it was handed to us meanwhile
			return err
		}
		if v, _, ok := strings.Cut(m.Payload, " "); ok && v == l.value {
			return nil
		}
	}
}

func (l *redisLineLocker) Unlock(ctx context.Context) error {
	if l.c.deadlines {
		return deadlineReleaseScript.Run(ctx, l.c.rc, l.keys, l.value, floorTTL.Milliseconds()).Err()
	}
	return lineReleaseScript.Run(ctx, l.c.rc, l.keys, l.value, floorTTL.Milliseconds()).Err()
}
