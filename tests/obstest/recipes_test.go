package obstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
)

// labelOf is the name attribute the default rule gives path(what).
func labelOf(what string) string { return "/obstest/" + what + "/#/x" }

func TestTelemetryMutex(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		r := newRig(t)
		ctx := ctxT(t)
		a, b := st.open(t, r.tel), st.open(t, r.tel)
		name := path("mutex")
		ma, mb := baton.NewMutex(a, name), baton.NewMutex(b, name)
		mine := attrs{"backend": st.name, "recipe": "mutex", "name": labelOf("mutex")}

		if _, err := ma.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		got := goLock(ctx, mb.Lock)
		r.waitValue(t, 10*time.Second, "b waiting", "baton.waiting", mine, 1)
		if v, _ := value(r.collect(t), "baton.held", mine); v != 1 {
			t.Fatalf("baton.held = %v while a holds, want 1", v)
		}
		if err := ma.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		rb := <-got
		if rb.err != nil {
			t.Fatal(rb.err)
		}
		if _, err := ma.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
			t.Fatalf("TryLock while b holds: %v, want ErrLocked", err)
		}
		r.cancelWaiting(t, ctx, "a waiting", mine, func(ctx context.Context) error {
			_, err := ma.Lock(ctx)
			return err
		})
		if err := mb.Unlock(ctx); err != nil {
			t.Fatal(err)
		}

		rm := r.collect(t)
		wantOutcomes(t, rm, mine, map[string]uint64{"acquired": 2, "timeout": 1, "canceled": 1, "error": 0})
		if n, sum := histCount(rm, "baton.hold.duration", with(mine, "end", "released")); n != 2 || sum <= 0 {
			t.Errorf("baton.hold.duration{end=released}: count %d sum %v, want 2 and > 0", n, sum)
		}
		for _, m := range []string{"baton.held", "baton.waiting"} {
			if v, ok := value(rm, m, mine); !ok || v != 0 {
				t.Errorf("%s = %v (reported %v), want 0 at the end", m, v, ok)
			}
		}

		// b's acquire span: it waited behind a (position 1) and got
		// b's token.
		var found bool
		for _, s := range r.spansNamed("baton.acquire") {
			pos, _ := spanAttr(s, "baton.position")
			tok, _ := spanAttr(s, "baton.token")
			att, _ := spanAttr(s, "baton.attempts")
			out, _ := spanAttr(s, "baton.outcome")
			if out.AsString() == "acquired" && pos.AsInt64() == 1 {
				found = true
				if tok.AsInt64() != rb.l.Token() {
					t.Errorf("acquire span token %d, want %d", tok.AsInt64(), rb.l.Token())
				}
				if att.AsInt64() < 1 {
					t.Errorf("acquire span attempts %d, want ≥ 1", att.AsInt64())
				}
				if n, _ := spanAttr(s, "baton.name"); n.AsString() != name {
					t.Errorf("acquire span name %q, want %q", n.AsString(), name)
				}
			}
		}
		if !found {
			t.Errorf("no acquire span with outcome acquired at position 1 among %d", len(r.spansNamed("baton.acquire")))
		}
		holds := r.spansNamed("baton.hold")
		if len(holds) != 2 {
			t.Fatalf("%d hold spans, want 2", len(holds))
		}
		for _, s := range holds {
			if e, _ := spanAttr(s, "baton.end"); e.AsString() != "released" {
				t.Errorf("hold span end %q, want released", e.AsString())
			}
			if len(s.Events) != 0 {
				t.Errorf("released hold span has events %v", s.Events)
			}
		}
	})
}

func with(a attrs, kv ...string) attrs {
	out := attrs{}
	for k, v := range a {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestTelemetryLost cuts a holder off the store: its lease is lost
// (session_lost), counted in baton.lost, and its hold span carries the
// baton.lost event.
func TestTelemetryLost(t *testing.T) {
	eachStore(t, func(t *testing.T, st store) {
		r := newRig(t)
		ctx := ctxT(t)
		s := st.open(t, r.tel)
		name := path("lost")
		mine := attrs{"backend": st.name, "recipe": "rwmutex_write", "name": labelOf("lost")}
		m := baton.NewRWMutex(s, name)
		l, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		heal := st.cut(t, s)
		defer heal()
		select {
		case <-l.Done():
		case <-time.After(10 * ttl):
			t.Fatal("lease not lost after the cut")
		}
		if !errors.Is(l.Err(), baton.ErrSessionLost) {
			t.Fatalf("lease error %v, want ErrSessionLost", l.Err())
		}
		// Done closes first; the hold is reported just after.
		await.Until(t, 5*time.Second, "the hold span", func() bool { return len(r.spansNamed("baton.hold")) == 1 })
		rm := r.collect(t)
		if v, _ := value(rm, "baton.lost", with(mine, "reason", "session_lost")); v != 1 {
			t.Errorf("baton.lost{reason=session_lost} = %v, want 1", v)
		}
		if n, _ := histCount(rm, "baton.hold.duration", with(mine, "end", "lost")); n != 1 {
			t.Errorf("baton.hold.duration{end=lost} count = %d, want 1", n)
		}
		if v, _ := value(rm, "baton.held", mine); v != 0 {
			t.Errorf("baton.held = %v after the loss, want 0", v)
		}
		holds := r.spansNamed("baton.hold")
		if len(holds) != 1 {
			t.Fatalf("%d hold spans, want 1", len(holds))
		}
		h := holds[0]
		if e, _ := spanAttr(h, "baton.end"); e.AsString() != "lost" {
			t.Errorf("hold span end %q, want lost", e.AsString())
		}
		if len(h.Events) != 1 || h.Events[0].Name != "baton.lost" {
			t.Fatalf("hold span events %v, want one baton.lost", h.Events)
		}
		var reason string
		for _, kv := range h.Events[0].Attributes {
			if kv.Key == "baton.reason" {
				reason = kv.Value.AsString()
			}
		}
		if reason != "session_lost" {
			t.Errorf("baton.lost event reason %q, want session_lost", reason)
		}
	})
}
