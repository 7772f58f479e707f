package obstest

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
)

// TestTelemetrySemaphore: two permits, three acquirers. The third waits
// at position 1 and sees both permits held; after a release it is
// admitted.
func TestTelemetrySemaphore(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		r := newRig(t)
		ctx := ctxT(t)
		name := path("sem")
		mine := attrs{"backend": st.name, "recipe": "semaphore", "name": labelOf("sem")}
		s := st.open(t, r.tel)
		sem := baton.NewSemaphore(s, name, 2)
		l1, err := sem.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sem.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			_, err := sem.Acquire(ctx)
			got <- err
		}()
		r.waitValue(t, 10*time.Second, "the third acquirer waiting", "baton.waiting", mine, 1)
		rm := r.collect(t)
		if v, _ := value(rm, "baton.semaphore.permits", with(mine, "state", "held")); v != 2 {
			t.Errorf("permits{state=held} = %v, want 2", v)
		}
		if v, _ := value(rm, "baton.semaphore.permits", with(mine, "state", "free")); v != 0 {
			t.Errorf("permits{state=free} = %v, want 0", v)
		}
		if err := sem.Release(ctx, l1); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		rm = r.collect(t)
		if n, _ := histCount(rm, "baton.acquire.duration", with(mine, "outcome", "acquired")); n != 3 {
			t.Errorf("acquired count %d, want 3", n)
		}
		if v, _ := value(rm, "baton.held", mine); v != 2 {
			t.Errorf("baton.held = %v, want 2", v)
		}
		var pos []int64
		for _, sp := range r.spansNamed("baton.acquire") {
			p, _ := spanAttr(sp, "baton.position")
			pos = append(pos, p.AsInt64())
		}
		if len(pos) != 3 || pos[2] != 1 {
			t.Errorf("acquire span positions %v, want the third at 1", pos)
		}
	})
}

// TestTelemetryQueue: depth at each listing, and the age of the item
// taken: no more than the time since its Put began (zk and memory record
// creation times; on etcd the item's name carries its producer's clock).
func TestTelemetryQueue(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		r := newRig(t)
		ctx := ctxT(t)
		name := path("queue")
		mine := attrs{"backend": st.name, "recipe": "queue", "name": labelOf("queue")}
		q := baton.NewQueue(st.open(t, r.tel), name)
		// Creation times are in whole milliseconds (etcd's) or the
		// server's clock (ZooKeeper's ctime): start a millisecond early.
		before := time.Now().Add(-time.Millisecond)
		for range 3 {
			if err := q.Put(ctx, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := q.Take(ctx); err != nil {
			t.Fatal(err)
		}
		most := time.Since(before).Seconds()
		rm := r.collect(t)
		if v, _ := value(rm, "baton.queue.depth", mine); v != 3 {
			t.Errorf("baton.queue.depth = %v after listing 3 items, want 3", v)
		}
		age, ok := value(rm, "baton.queue.oldest_age", mine)
		if !ok || age <= 0 || age > most {
			t.Errorf("baton.queue.oldest_age = %v (reported %v), want the taken item's age in (0, %.3f] s", age, ok, most)
		}
		if n, err := q.Len(ctx); err != nil || n != 2 {
			t.Fatalf("Len = %d, %v", n, err)
		}
		if v, _ := value(r.collect(t), "baton.queue.depth", mine); v != 2 {
			t.Errorf("baton.queue.depth = %v after Len, want 2", v)
		}
		for range 2 {
			if _, err := q.Take(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := q.Poll(ctx); err == nil {
			t.Fatal("Poll on an empty queue succeeded")
		}
		rm = r.collect(t)
		if v, _ := value(rm, "baton.queue.depth", mine); v != 0 {
			t.Errorf("baton.queue.depth = %v when empty, want 0", v)
		}
		if v, _ := value(rm, "baton.queue.oldest_age", mine); v != 0 {
			t.Errorf("baton.queue.oldest_age = %v when empty, want 0", v)
		}
	})
}

// TestTelemetryRenewSlack: each confirmed renewal records the time left
// before the session's deadline, between 0 and the TTL.
func TestTelemetryRenewSlack(t *testing.T) {
	for _, mk := range []func(*testing.T) store{zkStore, etcdStore} {
		st := mk(t)
		t.Run(st.name, func(t *testing.T) {
			r := newRig(t)
			s := st.open(t, r.tel)
			mine := attrs{"backend": st.name}
			await.Until(t, 10*time.Second, "two renewals", func() bool {
				n, _ := histCount(r.collect(t), "baton.session.renew.slack", mine)
				return n >= 2
			})
			n, sum := histCount(r.collect(t), "baton.session.renew.slack", mine)
			if mean := sum / float64(n); mean <= 0 || mean > s.TTL().Seconds() {
				t.Errorf("mean renew slack %.3fs over %d renewals, want in (0, %v]", mean, n, s.TTL())
			}
			if v, _ := value(r.collect(t), "baton.session.ttl", mine); v != s.TTL().Seconds() {
				t.Errorf("baton.session.ttl = %v, want %v", v, s.TTL().Seconds())
			}
			dl := s.Conn().(backend.Expirer).Expiry()
			if left := time.Until(dl); left <= 0 || left > s.TTL() {
				t.Errorf("Expiry is %v away, want in (0, %v]", left, s.TTL())
			}
			_ = s.Close(context.Background())
		})
	}
}
