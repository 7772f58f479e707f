package redis

import (
	_ "embed"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/internal/rediskeys"
)

var (
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/release.lua
	releaseSrc string
	//go:embed scripts/extend.lua
	extendSrc string
	//go:embed scripts/seed.lua
	seedSrc string

	acquireScript = goredis.NewScript(acquireSrc)
	releaseScript = goredis.NewScript(releaseSrc)
	extendScript  = goredis.NewScript(extendSrc)
	seedScript    = goredis.NewScript(seedSrc)
)

// Key layout of a lock named K. K itself is the plain string key redsync
// and bsm/redislock use (SET K value NX PX ttl), so they contend with us.
type keys struct {
	lock  string // K: the holder's random value, with the ttl
	token string // K:token: fencing counter (no ttl)
	queue string // K:queue: zset of waiters' entries by ticket
}

func keysFor(k string) keys {
	return keys{lock: k, token: k + rediskeys.Token, queue: k + rediskeys.Queue}
}

func (k keys) all() []string { return []string{k.lock, k.token, k.queue} }

// clusterKeysFor is the key layout of a lock named K on Redis Cluster: K,
// and the other keys with K as their hash tag, {K}:token and {K}:queue
// (rediskeys.ClusterKeys), all in K's slot.
func clusterKeysFor(k string) keys {
	token, queue := rediskeys.ClusterKeys(k)
	return keys{lock: k, token: token, queue: queue}
}
