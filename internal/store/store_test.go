package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/internal/zktest"
	"github.com/batonhq/baton/redis"
)

// TestStoreLockers: each kind of store hands out its own lock through
// the one Mutex/Locker pair, with the TTL where that kind consumes it (the
// lock's validity on Redis, the session's timeout on ZooKeeper); a
// lease's Deadline is set while held and gone after Unlock; a spec only
// sessions can make is refused on Redis with NeedSession's message, and
// made on ZooKeeper (two read sides hold at once).
func TestStoreLockers(t *testing.T) {
	const ttl = time.Second // a new Redis server's restart guard waits a TTL
	redlock := redistest.StartN(t, 3, redistest.Config{})
	for _, tc := range []struct {
		url      string
		sessions bool
		want     string // the Mutex's type
	}{
		{"redis://" + redistest.Start(t, redistest.Config{}).Addr(), false, "*redis.Mutex"},
		{"redlock://" + redlock[0].Addr() + "," + redlock[1].Addr() + "," + redlock[2].Addr(), false, "*redis.Redlock"},
		{"zk://" + zktest.Start(t).Addr(), true, "*baton.Mutex"},
	} {
		t.Run(strings.SplitN(tc.url, ":", 2)[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			u, err := Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(ctx, u, Options{DialTimeout: 10 * time.Second, TTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close(context.Background()) }()
			if (s.Session != nil) != tc.sessions {
				t.Fatalf("session %v, want one: %v", s.Session, tc.sessions)
			}
			if s.TTL() <= 0 || !tc.sessions && s.TTL() != ttl {
				t.Fatalf("TTL %v, want %v (the lock's validity on Redis, the granted session timeout else)", s.TTL(), ttl)
			}
			if s.Err() != nil {
				t.Fatalf("Err of an open store: %v", s.Err())
			}

			lk := s.Mutex("store-locker")
			if got := fmt.Sprintf("%T", lk); got != tc.want {
				t.Fatalf("Mutex is a %s, want %s", got, tc.want)
			}
			l, err := lk.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d := l.Deadline(); d.IsZero() || time.Until(d) > ttl+time.Second && !tc.sessions {
				t.Fatalf("held lease's Deadline %v (in %v), want one within the TTL", d, time.Until(d))
			}
			if err := lk.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if !l.Deadline().IsZero() {
				t.Fatalf("released lease's Deadline %v, want none", l.Deadline())
			}

			shared := LockSpec{Shared: true}
			r1, err := s.Locker("store-shared", shared)
			if !tc.sessions {
				if err == nil || !strings.Contains(err.Error(), "lock --shared (a read lock) needs zk://") {
					t.Fatalf("a read lock on %s: %v, want NeedSession's refusal", u.Scheme, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r2, err := s.Locker("store-shared", shared)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []baton.Locker{r1, r2} {
				if _, err := r.TryLock(ctx); err != nil {
					t.Fatalf("two read sides at once: %v", err)
				}
			}
			for _, r := range []baton.Locker{r1, r2} {
				if err := r.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if s.Expiry().IsZero() {
				t.Fatal("a session store without the session's deadline")
			}
		})
	}
}

// TestStoreIdentity: SetIdentity reaches what the store makes afterwards
// on Redis (the lock's value, which InspectRedis reads back) and the
// Session.
func TestStoreIdentity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := Parse("redis://" + redistest.Start(t, redistest.Config{}).Addr())
	if err != nil {
		t.Fatal(err)
	}
	o := Options{DialTimeout: 10 * time.Second, TTL: time.Second}
	s, err := Open(ctx, u, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close(context.Background()) }()
	id := baton.Identity{Host: "store-test-host", PID: 7, Cmd: "baton lock x"}
	s.SetIdentity(id)
	lk := s.Mutex("store-identity")
	if _, err := lk.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lk.Unlock(context.Background()) }()
	locks, err := InspectRedis(ctx, u, "store-identity", o)
	if err != nil || len(locks) != 1 {
		t.Fatalf("inspect: %+v %v", locks, err)
	}
	if got, ok := redis.ParseValue(locks[0].Holder); !ok || got.Host != id.Host || got.PID != id.PID || got.Cmd != id.Cmd {
		t.Fatalf("holder %q carries %+v (%v), want the identity %+v", locks[0].Holder, got, ok, id)
	}
}
