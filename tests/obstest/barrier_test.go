package obstest

import (
	"testing"
	"time"

	"github.com/batonhq/baton"
)

// TestTelemetryBarrier: a Wait on a raised barrier counts in baton.waiting
// until the barrier is removed, then is an acquired wait; a cancelled Wait
// is a canceled one. A barrier holds nothing: no hold, no baton.lost.
func TestTelemetryBarrier(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		r := newRig(t)
		ctx := ctxT(t)
		s := st.open(t, r.tel)
		name := path("barrier")
		mine := attrs{"backend": st.name, "recipe": "barrier", "name": labelOf("barrier")}
		b := baton.NewBarrier(s, name)
		if err := b.Set(ctx); err != nil {
			t.Fatal(err)
		}
		passed := make(chan error, 1)
		go func() { passed <- b.Wait(ctx) }()
		r.waitValue(t, 10*time.Second, "a waiter at the barrier", "baton.waiting", mine, 1)
		if err := b.Remove(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-passed; err != nil {
			t.Fatal(err)
		}
		if err := b.Set(ctx); err != nil {
			t.Fatal(err)
		}
		r.cancelWaiting(t, ctx, "a second waiter", mine, b.Wait)
		if err := b.Remove(ctx); err != nil {
			t.Fatal(err)
		}

		rm := r.collect(t)
		wantOutcomes(t, rm, mine, map[string]uint64{"acquired": 1, "canceled": 1, "timeout": 0, "error": 0})
		if v, ok := value(rm, "baton.waiting", mine); !ok || v != 0 {
			t.Errorf("baton.waiting = %v (reported %v), want 0", v, ok)
		}
		for _, m := range []string{"baton.lost", "baton.held"} {
			if _, ok := value(rm, m, mine); ok {
				t.Errorf("a barrier reports %s", m)
			}
		}
		for _, sp := range r.spansNamed("baton.acquire") {
			if _, ok := spanAttr(sp, "baton.token"); ok {
				t.Errorf("a barrier's wait span has a token")
			}
		}
	})
}

// TestTelemetryDoubleBarrier: the first of two participants waits in
// Enter (baton.waiting) until the second enters; both are then held until
// they leave (released). A participant whose session is cut loses its
// hold (session_lost).
func TestTelemetryDoubleBarrier(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		r := newRig(t)
		ctx := ctxT(t)
		name := path("dbarrier")
		mine := attrs{"backend": st.name, "recipe": "double_barrier", "name": labelOf("dbarrier")}
		d1 := baton.NewDoubleBarrier(st.open(t, r.tel), name, 2)
		d2 := baton.NewDoubleBarrier(st.open(t, r.tel), name, 2)
		entered := make(chan error, 2)
		go func() { entered <- d1.Enter(ctx) }()
		r.waitValue(t, 10*time.Second, "the first participant waiting", "baton.waiting", mine, 1)
		go func() { entered <- d2.Enter(ctx) }()
		for range 2 {
			if err := <-entered; err != nil {
				t.Fatal(err)
			}
		}
		rm := r.collect(t)
		if v, _ := value(rm, "baton.held", mine); v != 2 {
			t.Errorf("baton.held = %v inside the barrier, want 2", v)
		}
		if v, _ := value(rm, "baton.waiting", mine); v != 0 {
			t.Errorf("baton.waiting = %v inside the barrier, want 0", v)
		}
		left := make(chan error, 2)
		go func() { left <- d1.Leave(ctx) }()
		go func() { left <- d2.Leave(ctx) }()
		for range 2 {
			if err := <-left; err != nil {
				t.Fatal(err)
			}
		}
		rm = r.collect(t)
		if n, _ := histCount(rm, "baton.acquire.duration", with(mine, "outcome", "acquired")); n != 2 {
			t.Errorf("baton.acquire.duration{outcome=acquired} count = %d, want 2", n)
		}
		if n, sum := histCount(rm, "baton.hold.duration", with(mine, "end", "released")); n != 2 || sum <= 0 {
			t.Errorf("baton.hold.duration{end=released}: count %d sum %v, want 2 and > 0", n, sum)
		}
		if v, _ := value(rm, "baton.held", mine); v != 0 {
			t.Errorf("baton.held = %v after Leave, want 0", v)
		}

		// One participant alone (n = 1), then cut off the store.
		s := st.open(t, r.tel)
		solo := baton.NewDoubleBarrier(s, path("dbarrier"), 1)
		if err := solo.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		// Not healed: the session is closed while cut off. (Healed,
		// go-zookeeper v1.0.4 reconnects to close it and races on its
		// lastZxid while it sets the old watches again.)
		st.cut(t, s)
		select {
		case <-s.Done():
		case <-time.After(10 * ttl):
			t.Fatal("session not lost after the cut")
		}
		r.waitValue(t, 5*time.Second, "the lost hold", "baton.lost", with(mine, "reason", "session_lost"), 1)
		rm = r.collect(t)
		if n, _ := histCount(rm, "baton.hold.duration", with(mine, "end", "lost")); n != 1 {
			t.Errorf("baton.hold.duration{end=lost} count = %d, want 1", n)
		}
		if v, _ := value(rm, "baton.held", mine); v != 0 {
			t.Errorf("baton.held = %v after the loss, want 0", v)
		}
	})
}
