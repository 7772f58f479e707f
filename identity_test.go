package baton_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func TestIdentityRoundTrip(t *testing.T) {
	id := baton.Identity{Host: "h", PID: 7, Cmd: "report", TTL: 3 * time.Second, Created: time.UnixMilli(1700000000123)}
	got, ok := baton.ParseIdentity(id.Bytes())
	if !ok || got != id {
		t.Fatalf("ParseIdentity(%s) = %+v, %v", id.Bytes(), got, ok)
	}
	for _, d := range []string{"", "10.0.0.1", "kazoo-lock", "{}", "{not json", `{"cmd":"x"}`} {
		if _, ok := baton.ParseIdentity([]byte(d)); ok {
			t.Errorf("ParseIdentity(%q) accepted", d)
		}
	}
	long := baton.Identity{Host: "h", PID: 1, Cmd: strings.Repeat("x", 4000)}
	if b := long.Bytes(); len(b) > 512 {
		t.Fatalf("identity of %d bytes", len(b))
	}
	if d := baton.DefaultIdentity(); d.PID == 0 || d.Cmd == "" {
		t.Fatalf("default identity %+v", d)
	}
}

// TestIdentityInNodes: the nodes whose data the recipe does not use carry
// the session's identity.
func TestIdentityInNodes(t *testing.T) {
	ctx := context.Background()
	s0, err := memory.New().Open(ctx, memory.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s0.Close(ctx)
	id := baton.Identity{Host: "h1", PID: 42, Cmd: "worker"}
	s := s0.WithIdentity(id)
	if s.Identity() != id || s0.Identity() != baton.DefaultIdentity() {
		t.Fatalf("identities %+v, %+v", s.Identity(), s0.Identity())
	}
	check := func(dir string, want int) {
		t.Helper()
		kids, err := s.Conn().Children(ctx, dir)
		if err != nil || len(kids) != want {
			t.Fatalf("%s: %d children, %v", dir, len(kids), err)
		}
		for _, k := range kids {
			data, _, err := s.Conn().Get(ctx, k.Path)
			got, ok := baton.ParseIdentity(data)
			if err != nil || !ok || got.Host != id.Host || got.PID != id.PID || got.Cmd != id.Cmd ||
				got.TTL != 10*time.Second || time.Since(got.Created) > time.Minute {
				t.Fatalf("%s holds %q (%v)", k.Path, data, err)
			}
		}
	}
	if _, err := baton.NewMutex(s, "/m").Lock(ctx); err != nil {
		t.Fatal(err)
	}
	check("/m", 1)
	rw := baton.NewRWMutex(s, "/rw")
	if _, err := rw.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	check("/rw", 2)
	if _, err := baton.NewSemaphore(s, "/sem", 2).Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	check("/sem/leases", 1)
	d := baton.NewDoubleBarrier(s, "/db", 1)
	if err := d.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	kids, err := s.Conn().Children(ctx, "/db")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if k.Name == "ready" {
			continue
		}
		data, _, err := s.Conn().Get(ctx, k.Path)
		if got, ok := baton.ParseIdentity(data); err != nil || !ok || got.PID != id.PID {
			t.Fatalf("participant %s holds %q (%v)", k.Path, data, err)
		}
	}
}
