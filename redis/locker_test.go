package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// The baton.Locker suite on both Redis locks. Every handle is its own
// holder, on a Client (or a Quorum) of its own dialed through TCP proxies
// of its own, so that one holder can be cut off the servers.

func TestMutexLocker(t *testing.T) {
	srv := sharedServer(t)
	batontest.RunLocker(t, mutexLockers(srv, false))
	t.Run("Reentrant", func(t *testing.T) { batontest.RunLocker(t, mutexLockers(srv, true, redis.Reentrant())) })
}

func TestRedlockLocker(t *testing.T) {
	srvs := redistest.Shared(t, "redlock", 5)
	for _, s := range srvs {
		s.WaitUp(batontest.LoadTTL) // the restart guard holds back no lock of that ttl
	}
	batontest.RunLocker(t, redlockLockers(srvs, false))
	t.Run("Reentrant", func(t *testing.T) { batontest.RunLocker(t, redlockLockers(srvs, true, redis.Reentrant())) })
}

// mutexLockers is the Locker harness of redis.Mutex on srv with opts;
// reentrant says whether opts make it re-entrant.
func mutexLockers(srv *redistest.Server, reentrant bool, opts ...redis.Option) batontest.LockerHarness {
	return batontest.LockerHarness{
		Name:      label("redis.Mutex", reentrant),
		Reentrant: reentrant,
		Tokens:    true,
		New: func(t *testing.T, n int, ttl time.Duration) batontest.LockerSet {
			return lockerSet(t, []*redistest.Server{srv}, n, func(key string, ttl time.Duration, ps []*proxy.Proxy) baton.Locker {
				c := dialVia(t, ps[0])
				t.Cleanup(func() { _ = c.Close() })
				return redis.NewMutex(c, key, append(opts, redis.WithTTL(ttl))...)
			}, ttl)
		},
	}
}

// redlockLockers is the Locker harness of redis.Redlock on srvs with
// opts; reentrant says whether opts make it re-entrant.
func redlockLockers(srvs []*redistest.Server, reentrant bool, opts ...redis.Option) batontest.LockerHarness {
	return batontest.LockerHarness{
		Name:      label("redis.Redlock", reentrant),
		Reentrant: reentrant,
		New: func(t *testing.T, n int, ttl time.Duration) batontest.LockerSet {
			return lockerSet(t, srvs, n, func(key string, ttl time.Duration, ps []*proxy.Proxy) baton.Locker {
				cs := make([]*redis.Client, len(ps))
				for i, p := range ps {
					cs[i] = dialVia(t, p)
				}
				q := redis.NewQuorum(cs...)
				t.Cleanup(func() { _ = q.Close() }) // and its clients
				return redis.NewRedlock(q, key, append(opts, redis.WithTTL(ttl))...)
			}, ttl)
		},
	}
}

func label(name string, reentrant bool) string {
	if reentrant {
		return name + ", Reentrant"
	}
	return name
}

// lockerSet makes n handles on a fresh key over srvs with newLock, each
// through proxies of its own (one per server), with the given ttl (0: a
// second). Contenders counts the key and the live entries of its line on
// each server, and reports the most any has. An entry whose deadline has
// passed is no contender: every release skips it (and drops it, as does a
// join that meets it), and it stays in the sorted set only until then or
// until the line expires (two entry lives). Such dead entries are what a
// Redlock round leaves on a master it cannot reach in time (a release
// that never got there, a request overtaken on the way by its waiter's
// release): bounded by the entry's life, one ttl, and not counted here.
// The lost-reply cases a waiter can clean up it must clean at once:
// TestRedlockLostReplyLeavesNoEntry.
func lockerSet(t *testing.T, srvs []*redistest.Server, n int, newLock func(key string, ttl time.Duration, ps []*proxy.Proxy) baton.Locker, ttl time.Duration) batontest.LockerSet {
	if ttl == 0 {
		ttl = time.Second
	}
	key := freshKey(t)
	direct := make([]*redis.Client, len(srvs))
	for i, s := range srvs {
		direct[i] = dial(t, s)
	}
	proxies := make([][]*proxy.Proxy, n)
	lockers := make([]baton.Locker, n)
	for i := range lockers {
		for _, s := range srvs {
			proxies[i] = append(proxies[i], proxy.Start(t, s.Addr()))
		}
		lockers[i] = newLock(key, ttl, proxies[i])
	}
	return batontest.LockerSet{
		Lockers: lockers,
		Contenders: func(t *testing.T) int {
			most := 0
			for _, c := range direct {
				n, err := c.Redis().Eval(context.Background(), liveContenders, []string{key, key + ":queue"}).Int()
				if err != nil {
					t.Fatal(err)
				}
				most = max(most, n)
			}
			return most
		},
		Cut: func(t *testing.T, i int) func() {
			for _, p := range proxies[i] {
				p.Blackhole()
			}
			return func() {
				for _, p := range proxies[i] {
					p.Heal()
				}
			}
		},
	}
}

// liveContenders counts KEYS[1] if it exists and the entries of the line
// KEYS[2] whose deadline ("<value>|<deadline, server ms>|…") has not passed.
const liveContenders = `
local n = redis.call('EXISTS', KEYS[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, e in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local dl = string.match(e, '^[^|]+|(%d+)|')
  if not dl or tonumber(dl) >= now then n = n + 1 end
end
return n`

// dialVia connects to a server through p.
func dialVia(t testing.TB, p *proxy.Proxy) *redis.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redis.Dial(ctx, "redis://"+p.Addr())
	if err != nil {
		t.Fatalf("dial %s: %v", p.Addr(), err)
	}
	return c
}
