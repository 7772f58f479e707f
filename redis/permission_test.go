package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

// aclUsers may all connect (PING works) but each lacks something a lock
// needs: access to its keys, a command its scripts call, or the script
// commands themselves. "holder" may do everything until a test revokes
// its keys.
var aclUsers = []string{
	"nokeys on >pw ~other:* &* +@all",
	"noincr on >pw ~* &* +@all -incr",
	"noeval on >pw ~* &* +@all -evalsha -eval",
	"holder on >pw ~* &* +@all",
	"nochan on >pw ~* resetchannels +@all",
	"noping on >pw ~* &* +@all -ping",
	// The least the README asks for, on lock "scoped".
	"scoped on >pw ~scoped ~scoped:* &baton:wake:* +@read +@write +@scripting +@pubsub +ping +time +info",
}

// refused are the users of aclUsers that can never take a lock, with
// what Redis tells them.
var refused = map[string]string{
	"nokeys": "NOPERM",
	"noincr": "NOPERM",
	"noeval": "NOPERM",
}

func dialAs(t testing.TB, srv *redistest.Server, user string) *redis.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redis.Dial(ctx, "redis://"+user+":pw@"+srv.Addr())
	if err != nil {
		t.Fatalf("dial as %s: %v", user, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// mustPermission fails unless err satisfies baton.ErrPermission, keeps
// Redis's own words (want), came quickly (not by ctx ending) and does
// not pass for a loss of contact or a timeout.
func mustPermission(t testing.TB, what string, err error, want string, began time.Time) {
	t.Helper()
	if !errors.Is(err, baton.ErrPermission) || !strings.Contains(err.Error(), want) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("%s: want an error wrapping baton.ErrPermission with Redis's %q, got %v", what, want, err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Fatalf("%s: the refusal took %v", what, d)
	}
}

// revokeKeys takes every key away from user, as an admin would; the change
// applies to its open connections at once. The test's end gives them back.
func revokeKeys(t testing.TB, ctx context.Context, admin goredis.UniversalClient, user string) {
	t.Helper()
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "resetkeys", "~other:*").Err(); err != nil {
		t.Fatal(err)
	}
}

func TestPermissionErrors(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{Users: aclUsers})
	// The restart guard holds locks back until the server has been up for
	// their ttl.
	const ttl = time.Second
	srv.WaitUp(ttl)
	admin := dial(t, srv)
	ctx := within(t, 30*time.Second)
	// Dial's PING refused: a refusal, not "cannot connect".
	if c, err := redis.Dial(ctx, "redis://noping:pw@"+srv.Addr()); err == nil {
		_ = c.Close()
		t.Fatal("Dial as noping succeeded")
	} else {
		mustPermission(t, "Dial without PING", err, "NOPERM", time.Now())
	}
	for user, want := range refused {
		c := dialAs(t, srv, user)
		key := freshKey(t)
		for _, try := range []bool{false, true} {
			m := redis.NewMutex(c, key, redis.WithTTL(ttl))
			began := time.Now()
			var err error
			if try {
				_, err = m.TryLock(ctx)
			} else {
				_, err = m.Lock(ctx)
			}
			mustPermission(t, user+": Lock (try "+map[bool]string{false: "no", true: "yes"}[try]+")", err, want, began)
			if m.Held() {
				t.Fatalf("%s: refused, yet the handle holds", user)
			}
		}
		// Nothing was left behind: another user takes the lock at once.
		m := redis.NewMutex(admin, key, redis.WithTTL(ttl))
		if _, err := m.TryLock(ctx); err != nil {
			t.Fatalf("after %s's refusals: %v", user, err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("Scoped", func(t *testing.T) {
		// A user granted what the README lists holds, waits, is handed
		// the lock, and releases.
		a := redis.NewMutex(dialAs(t, srv, "scoped"), "scoped", redis.WithTTL(ttl))
		b := redis.NewMutex(dialAs(t, srv, "scoped"), "scoped", redis.WithTTL(ttl))
		if _, err := a.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			_, err := b.Lock(ctx)
			got <- err
		}()
		await.Until(t, 5*time.Second, "b to wait in line", func() bool {
			n, _ := admin.Redis().ZCard(ctx, "scoped:queue").Result()
			return n == 1
		})
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if err := b.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Wait", func(t *testing.T) {
		// nochan may take a free lock, but not wait for a taken one: it
		// may not subscribe to its wake-up channel.
		key := freshKey(t)
		held := redis.NewMutex(admin, key, redis.WithTTL(ttl))
		if _, err := held.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		m := redis.NewMutex(dialAs(t, srv, "nochan"), key, redis.WithTTL(ttl))
		began := time.Now()
		_, err := m.Lock(ctx)
		mustPermission(t, "nochan: Lock on a taken lock", err, "NOPERM", began)
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Lock(ctx); err != nil {
			t.Fatalf("nochan: Lock on a free lock: %v", err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Unlock", func(t *testing.T) {
		m := redis.NewMutex(dialAs(t, srv, "holder"), freshKey(t), redis.WithTTL(ttl))
		if _, err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		revokeKeys(t, ctx, admin.Redis(), "holder")
		t.Cleanup(func() { _ = admin.Redis().Do(context.Background(), "ACL", "SETUSER", "holder", "allkeys").Err() })
		began := time.Now()
		mustPermission(t, "Unlock after the keys were revoked", m.Unlock(ctx), "NOPERM", began)
	})

	t.Run("Renew", func(t *testing.T) {
		const ttl = 300 * time.Millisecond
		m := redis.NewMutex(dialAs(t, srv, "holder"), freshKey(t), redis.WithTTL(ttl))
		l, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		revokeKeys(t, ctx, admin.Redis(), "holder")
		t.Cleanup(func() { _ = admin.Redis().Do(context.Background(), "ACL", "SETUSER", "holder", "allkeys").Err() })
		waitDone(t, l, 5*ttl)
		mustLost(t, l.Err())
		mustPermission(t, "the lease after a refused renewal", l.Err(), "NOPERM", time.Now())
		mustPermission(t, "Unlock after a refused renewal", m.Unlock(ctx), "NOPERM", time.Now())
	})
}

func TestRedlockPermissionErrors(t *testing.T) {
	srvs := redistest.StartN(t, 3, redistest.Config{Users: aclUsers})
	// Every quorum dialed below counts the masters at once: the restart
	// guard holds them back until they have been up for a ttl.
	for _, s := range srvs {
		s.WaitUp(rlTTL)
	}
	ctx := within(t, 30*time.Second)
	as := func(user string) *redis.Quorum {
		var urls []string
		for _, s := range srvs {
			urls = append(urls, "redis://"+user+":pw@"+s.Addr())
		}
		q, err := redis.DialRedlock(ctx, urls)
		if err != nil {
			t.Fatalf("DialRedlock as %s: %v", user, err)
		}
		t.Cleanup(func() { _ = q.Close() })
		return q
	}
	// Once the masters count (up for a ttl), an admin's TryLock holds.
	adminQ := quorum(t, srvs)
	await.Until(t, 10*time.Second, "the masters to count toward a quorum", func() bool {
		r := redis.NewRedlock(adminQ, freshKey(t), redis.WithTTL(rlTTL))
		if _, err := r.TryLock(ctx); err != nil {
			return false
		}
		return r.Unlock(ctx) == nil
	})
	for _, try := range []bool{false, true} {
		r := redis.NewRedlock(as("nokeys"), freshKey(t), redis.WithTTL(rlTTL))
		began := time.Now()
		var err error
		if try {
			_, err = r.TryLock(ctx)
		} else {
			_, err = r.Lock(ctx)
		}
		mustPermission(t, "nokeys: Redlock", err, "NOPERM", began)
	}
	// noeval's Lock on a taken lock waits in line, which takes a script.
	key := freshKey(t)
	held := redis.NewRedlock(adminQ, key, redis.WithTTL(rlTTL))
	if _, err := held.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	noeval := redis.NewRedlock(as("noeval"), key, redis.WithTTL(rlTTL))
	began := time.Now()
	_, err := noeval.Lock(ctx)
	mustPermission(t, "noeval: Redlock Lock on a taken lock", err, "NOPERM", began)
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// A free lock it takes with SET NX, but cannot give back (a script).
	if _, err := noeval.TryLock(ctx); err != nil {
		t.Fatalf("noeval: TryLock on a free lock: %v", err)
	}
	mustPermission(t, "noeval: Redlock Unlock", noeval.Unlock(ctx), "NOPERM", time.Now())

	admins := make([]goredis.UniversalClient, len(srvs))
	for i, s := range srvs {
		admins[i] = dial(t, s).Redis()
	}
	revokeAll := func(t *testing.T) {
		for _, a := range admins {
			revokeKeys(t, ctx, a, "holder")
		}
		t.Cleanup(func() {
			for _, a := range admins {
				_ = a.Do(context.Background(), "ACL", "SETUSER", "holder", "allkeys").Err()
			}
		})
	}
	t.Run("Unlock", func(t *testing.T) {
		r := redis.NewRedlock(as("holder"), freshKey(t), redis.WithTTL(rlTTL))
		if _, err := r.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		revokeAll(t)
		mustPermission(t, "Redlock Unlock after the keys were revoked", r.Unlock(ctx), "NOPERM", time.Now())
	})
	t.Run("Renew", func(t *testing.T) {
		r := redis.NewRedlock(as("holder"), freshKey(t), redis.WithTTL(rlTTL))
		l, err := r.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		revokeAll(t)
		waitDone(t, l, 3*rlTTL)
		mustLost(t, l.Err())
		mustPermission(t, "the Redlock lease after a refused renewal", l.Err(), "NOPERM", time.Now())
	})
}
