package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/internal/testca"
)

// TestRedisTLSFiles: a rediss:// store takes its CA from Options.TLS, for
// Open and for InspectRedis; without it the server's certificate is not
// trusted. The password never shows.
func TestRedisTLSFiles(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{TLS: true, Password: "Redis-Pa55"})
	u, err := Parse("rediss://:Redis-Pa55@" + srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A TTL of a second: on a new server the restart guard waits a TTL.
	o := Options{DialTimeout: 5 * time.Second, TTL: time.Second, TLS: TLSFiles{CA: srv.CAFile()}}
	s, err := Open(ctx, u, o)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Locker("tls-lock", LockSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	locks, err := InspectRedis(ctx, u, "tls-lock", o)
	if err != nil || len(locks) != 1 || locks[0].Holder == "" {
		t.Fatalf("inspect: %+v %v", locks, err)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	_ = s.Close(ctx)

	other := testca.New(t, "other")
	for _, f := range []TLSFiles{{}, {CA: other.CertFile}} {
		o := Options{DialTimeout: 5 * time.Second, TLS: f}
		if s, err := Open(ctx, u, o); err == nil {
			_ = s.Close(ctx)
			t.Errorf("opened trusting %+v", f)
		} else if !strings.Contains(err.Error(), "certificate") || strings.Contains(err.Error(), "Redis-Pa55") {
			t.Errorf("open trusting %+v: %v", f, err)
		}
		if _, err := InspectRedis(ctx, u, "tls-lock", o); err == nil || strings.Contains(err.Error(), "Redis-Pa55") {
			t.Errorf("inspect trusting %+v: %v", f, err)
		}
	}
	// TLS files for a store that is not TLS.
	plain, _ := Parse("redis://" + srv.Addr())
	if _, err := Open(ctx, plain, Options{TLS: TLSFiles{CA: srv.CAFile()}}); !errors.Is(err, ErrBadTLS) {
		t.Errorf("redis:// with a CA: %v, want ErrBadTLS", err)
	}
}
