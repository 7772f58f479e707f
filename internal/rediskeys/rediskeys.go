// Package rediskeys is the layout of a Redis lock's keys, written once:
// the lock named K is the string key K (as redsync's), and its other keys
// are K with a suffix. The redis package builds them from here, and
// baton.CleanName refuses every name that ends in one of them.
package rediskeys

// The suffixes of a lock K's keys besides K.
const (
	// Token makes K:token, the fencing counter (no ttl).
	Token = ":token"
	// Queue makes K:queue, the line: a sorted set of the waiters' entries
	// by ticket.
	Queue = ":queue"
)

// Reserved are the suffixes no lock name may end in, since such a name
// would share keys with another lock: Token and Queue, and ":waiting"
// and ":release", the keys of earlier layouts, which a client of an older
// baton may still write.
var Reserved = []string{Token, Queue, ":waiting", ":release"}
