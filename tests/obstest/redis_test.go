package obstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

func dialRedis(t *testing.T, url string) *redis.Client {
	t.Helper()
	c, err := redis.Dial(ctxT(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestTelemetryRedis: a Redis Mutex reports its acquisitions (acquired,
// timeout), holds, renew slack and TTL, and a lease revoked by a DEL of
// its key (node_deleted) with the baton.lost span event.
func TestTelemetryRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{})
	r := newRig(t)
	ctx := ctxT(t)
	key := path("redis")
	mine := attrs{"backend": "redis", "recipe": "mutex", "name": labelOf("redis")}
	ttl := 600 * time.Millisecond
	c1, c2 := dialRedis(t, srv.URL()), dialRedis(t, srv.URL())
	m1 := redis.NewMutex(c1, key, redis.WithTTL(ttl), redis.WithTelemetry(r.tel))
	m2 := redis.NewMutex(c2, key, redis.WithTTL(ttl), redis.WithTelemetry(r.tel))

	l1, err := m1.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock: %v", err)
	}
	// Held across two renewals (every ttl/3).
	await.Until(t, 10*time.Second, "two renewals", func() bool {
		n, _ := histCount(r.collect(t), "baton.session.renew.slack", attrs{"backend": "redis"})
		return n >= 2
	})
	if l1.Err() != nil {
		t.Fatal(l1.Err())
	}
	got := goLock(ctx, m2.Lock)
	if err := m1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r2 := <-got
	if r2.err != nil {
		t.Fatal(r2.err)
	}
	// An operator deletes the key: m2's renewal finds it gone.
	if err := c1.Redis().Del(ctx, redis.KeyOf(key)).Err(); err != nil {
		t.Fatal(err)
	}
	l2 := r2.l
	select {
	case <-l2.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("lease not ended after its key was deleted")
	}
	await.Until(t, 5*time.Second, "two hold spans", func() bool { return len(r.spansNamed("baton.hold")) == 2 })

	rm := r.collect(t)
	wantOutcomes(t, rm, mine, map[string]uint64{"acquired": 2, "timeout": 1})
	if n, _ := histCount(rm, "baton.hold.duration", with(mine, "end", "released")); n != 1 {
		t.Errorf("hold{end=released} count %d, want 1", n)
	}
	if n, _ := histCount(rm, "baton.hold.duration", with(mine, "end", "revoked")); n != 1 {
		t.Errorf("hold{end=revoked} count %d, want 1", n)
	}
	if v, _ := value(rm, "baton.lost", with(mine, "reason", "node_deleted")); v != 1 {
		t.Errorf("lost{reason=node_deleted} = %v, want 1", v)
	}
	if v, _ := value(rm, "baton.held", mine); v != 0 {
		t.Errorf("held = %v, want 0", v)
	}
	n, sum := histCount(rm, "baton.session.renew.slack", attrs{"backend": "redis"})
	if mean := sum / float64(n); mean <= 0 || mean > ttl.Seconds() {
		t.Errorf("mean renew slack %.3fs, want in (0, %v]", mean, ttl)
	}
	if v, _ := value(rm, "baton.session.ttl", attrs{"backend": "redis"}); v != ttl.Seconds() {
		t.Errorf("session ttl %v, want %v", v, ttl.Seconds())
	}
	var lostEvents int
	for _, s := range r.spansNamed("baton.hold") {
		for _, e := range s.Events {
			if e.Name == "baton.lost" {
				lostEvents++
			}
		}
	}
	if lostEvents != 1 {
		t.Errorf("%d baton.lost events, want 1", lostEvents)
	}
}

// TestTelemetryRedlockLost: a Redlock over three masters, all paused, loses
// its lease when no renewal is confirmed in time (renew_failed).
func TestTelemetryRedlockLost(t *testing.T) {
	srvs := redistest.StartN(t, 3, redistest.Config{})
	var urls []string
	for _, s := range srvs {
		urls = append(urls, s.URL())
	}
	q, err := redis.DialRedlock(ctxT(t), urls)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	r := newRig(t)
	key := path("redlock")
	mine := attrs{"backend": "redlock", "recipe": "mutex", "name": labelOf("redlock")}
	m := redis.NewRedlock(q, key, redis.WithTTL(600*time.Millisecond), redis.WithTelemetry(r.tel))
	l, err := m.Lock(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs {
		s.Pause()
	}
	defer func() {
		for _, s := range srvs {
			s.Resume()
		}
	}()
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("lease not lost with every master paused")
	}
	await.Until(t, 5*time.Second, "the hold span", func() bool { return len(r.spansNamed("baton.hold")) == 1 })
	rm := r.collect(t)
	if v, _ := value(rm, "baton.lost", with(mine, "reason", "renew_failed")); v != 1 {
		t.Errorf("lost{reason=renew_failed} = %v, want 1", v)
	}
	if n, _ := histCount(rm, "baton.hold.duration", with(mine, "end", "lost")); n != 1 {
		t.Errorf("hold{end=lost} count %d, want 1", n)
	}
	for _, s := range srvs {
		s.Resume()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.Unlock(ctx)
}
