package redis

import (
	"fmt"
	"time"

	"github.com/batonhq/baton"
)

// Option configures a Mutex or a Redlock.
type Option func(*options)

type options struct {
	ttl      time.Duration
	tel      baton.Telemetry
	ident    *baton.Identity // WithIdentity's, or nil
	replicas int             // WithReplicas's
	// reentrant: a Lock while held counts a level (Reentrant)
	reentrant bool
}

// WithTTL sets the TTL: how long a holder that goes silent (crashed, cut
// off, paused) keeps its locks before the store gives them to others. On
// Redis, which has no sessions, it is the lock's own (default
// baton.DefaultTTL, 10s), where zk's and etcd's is their session's. The
// holder renews every ttl/3 and is told it lost the lock when validity
// runs out unconfirmed. A ttl under MinTTL makes Lock and TryLock fail
// with an error wrapping baton.ErrInvalidTTL, as zk and etcd refuse a
// session TTL below their minimum.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) { o.ttl = ttl }
}

// WithIdentity writes id into the lock's value, after its random part
// (K = <32 hex digits>.<id as base64url JSON>), and into the waiter's
// entry in the line, so that a reader of the keys (`baton status`,
// ParseValue) can tell which host and process holds or waits, as the
// node data tells on ZooKeeper and etcd; each attempt stamps it with the
// lock's ttl and the time, as baton's nodes are. Without it the value is
// the random part alone. Clients of either form share a lock.
func WithIdentity(id baton.Identity) Option {
	return func(o *options) { o.ident = &id }
}

// Reentrant makes a Mutex or Redlock count its holds instead of taking
// turns, as baton.Reentrant does for a baton.Mutex: Lock on a handle that
// holds a live lease returns that lease at once and raises a level, and
// Unlock lowers it; the last Unlock releases. It suits one holder whose
// calls nest, not goroutines sharing a handle, which would all be let in
// at once.
func Reentrant() Option {
	return func(o *options) { o.reentrant = true }
}

func buildOptions(opts []Option) options {
	o := options{ttl: baton.DefaultTTL}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// MinTTL is the shortest lock ttl: below it the renewals (every ttl/3) and
// the drift allowance leave no validity to work in.
const MinTTL = 100 * time.Millisecond

// checkTTL refuses a ttl below MinTTL.
func checkTTL(key string, ttl time.Duration) error {
	if ttl < MinTTL {
		return fmt.Errorf("%w: redis lock %s: ttl %v is below the minimum %v", baton.ErrInvalidTTL, key, ttl, MinTTL)
	}
	return nil
}

// drift is the clock-drift allowance subtracted from every validity
// period: 1% of the ttl plus 2ms, as the Redlock spec suggests.
func drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// lossMargin is how long before the lock's validity runs out a holder's
// lease reports the loss: the drift allowance, and never less than a tenth
// of the ttl (as on ZooKeeper and etcd), so that a timer firing late on a
// busy client still fires before the key can expire on the server.
func lossMargin(ttl time.Duration) time.Duration { return max(drift(ttl), ttl/10) }
