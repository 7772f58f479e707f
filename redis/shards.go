package redis

import (
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/internal/rediskeys"
)

// shards are the hubs of a Client on Redis Cluster, one per hash slot its
// waiters have waited in, made on first use and kept until Close: each
// subscribes (SSUBSCRIBE) the Client's channel of its slot,
// rediskeys.Channel(slot, id), on the node that owns the slot, so that a
// release script, which may publish only in the slot of its keys, can
// wake the waiter with SPUBLISH. Many locks in one slot share one hub.
// Each is one pub/sub connection: go-redis resubscribes all of a
// connection's sharded channels in one command, which a cluster refuses
// for channels of several slots.
type shards struct {
	rc *goredis.ClusterClient
	id string

	mu     sync.Mutex
	by     map[int]*hub
	closed bool
}

func newShards(rc *goredis.ClusterClient) *shards {
	return &shards{rc: rc, id: randomValue(), by: map[int]*hub{}}
}

// of returns the hub of key's slot.
func (s *shards) of(key string) *hub {
	slot := rediskeys.Slot(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.by[slot]
	if h == nil {
		h = newHubOn(s.rc, rediskeys.Channel(slot, s.id), true)
		if s.closed {
			h.close()
		}
		s.by[slot] = h
	}
	return h
}

func (s *shards) close() {
	s.mu.Lock()
	s.closed = true
	hubs := make([]*hub, 0, len(s.by))
	for _, h := range s.by {
		hubs = append(hubs, h)
	}
	s.mu.Unlock()
	for _, h := range hubs {
		h.close()
	}
}
