package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// A Redis hold's lease has the hold's validity as its Deadline (the
// handle's Expiry). With the servers frozen (SIGSTOP) no extension is
// confirmed: Jeopardy closes while the lease still holds, within the grace
// of the Deadline (a fifth of the ttl); then Done; and the Deadline read in
// jeopardy has passed when another client takes the lock.
func TestDeadlineAndJeopardy(t *testing.T) {
	const ttl = 3 * time.Second
	for _, tc := range []struct {
		name string
		n    int
	}{{"Mutex", 1}, {"Redlock", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srvs := redistest.StartN(t, tc.n, redistest.Config{})
			ctx := within(t, 30*time.Second)
			key := freshKey(t)
			var holder, other interface {
				Lock(ctx context.Context) (*baton.Lease, error)
				Expiry() time.Time
			}
			if tc.n == 1 {
				holder = redis.NewMutex(dial(t, srvs[0]), key, redis.WithTTL(ttl))
				other = redis.NewMutex(dial(t, srvs[0]), key, redis.WithTTL(ttl))
			} else {
				holder = redis.NewRedlock(quorum(t, srvs), key, redis.WithTTL(ttl))
				other = redis.NewRedlock(quorum(t, srvs), key, redis.WithTTL(ttl))
			}
			l, err := holder.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d, e := l.Deadline(), holder.Expiry(); d.IsZero() || !d.Equal(e) || !l.Valid() {
				t.Fatalf("held: Deadline %v, Expiry %v, valid %v; want the Expiry, valid", d, e, l.Valid())
			}
			for _, s := range srvs {
				s.Pause()
				t.Cleanup(s.Resume)
			}
			var deadline time.Time
			select {
			case <-l.Jeopardy():
				deadline = l.Deadline()
				lead := time.Until(deadline)
				if l.Err() != nil || !l.Valid() || lead > ttl/5 {
					t.Fatalf("in jeopardy %v before the deadline: lease error %v, valid %v; want held, within the grace %v", lead, l.Err(), l.Valid(), ttl/5)
				}
			case <-ctx.Done():
				t.Fatal("no Jeopardy with the servers frozen")
			}
			waitDone(t, l, 10*time.Second)
			if l.Valid() || !l.Deadline().IsZero() {
				t.Fatalf("lost: valid %v, Deadline %v", l.Valid(), l.Deadline())
			}
			for _, s := range srvs {
				s.Resume()
			}
			if _, err := other.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if now := time.Now(); !now.After(deadline) {
				t.Fatalf("another client took the lock %v before the holder's Deadline", deadline.Sub(now))
			}
		})
	}
}
