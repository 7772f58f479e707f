package redis

import (
	_ "embed"

	goredis "github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/release.lua
	releaseSrc string
	//go:embed scripts/extend.lua
	extendSrc string
	//go:embed scripts/setnx.lua
	setnxSrc string
	//go:embed scripts/del.lua
	delSrc string

	acquireScript = goredis.NewScript(acquireSrc)
	releaseScript = goredis.NewScript(releaseSrc)
	extendScript  = goredis.NewScript(extendSrc)
	setnxScript   = goredis.NewScript(setnxSrc)
	delScript     = goredis.NewScript(delSrc)
)

// Key layout of a lock named K. K itself is the plain string key redsync
// and bsm/redislock use (SET K value NX PX ttl), so they contend with us.
type keys struct {
	lock    string // K: the holder's random value, with the ttl
	token   string // K:token: fencing counter (no ttl)
	queue   string // K:queue: zset of waiters' values by arrival ticket
	waiting string // K:waiting: zset of waiters' values by deadline (server ms)
	channel string // K:release: pub/sub channel, payload = the next waiter
}

func keysFor(k string) keys {
	return keys{lock: k, token: k + ":token", queue: k + ":queue", waiting: k + ":waiting", channel: k + ":release"}
}
