package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/redis"
)

func TestDialAuth(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{
		Password: "default-pw",
		Users:    []string{"alice on >alice-pw ~* &* +@all"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ok := []string{
		"redis://:default-pw@" + srv.Addr(),
		"redis://alice:alice-pw@" + srv.Addr() + "/0",
	}
	for _, u := range ok {
		c, err := redis.Dial(ctx, u)
		if err != nil {
			t.Fatalf("Dial %s: %v", redis.Redact(u), err)
		}
		// A short ttl: the server is new, and the restart guard holds
		// locks back for a ttl.
		m := redis.NewMutex(c, freshKey(t), redis.WithTTL(time.Second))
		if _, err := m.Lock(ctx); err != nil {
			t.Fatalf("Lock as %s: %v", redis.Redact(u), err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
	}
	bad := map[string]string{
		"redis://:Wrong-Secret-1@" + srv.Addr():      "Wrong-Secret-1",
		"redis://alice:Wrong-Secret-2@" + srv.Addr(): "Wrong-Secret-2",
		"redis://" + srv.Addr():                      "",
	}
	for u, secret := range bad {
		start := time.Now()
		c, err := redis.Dial(ctx, u)
		if err == nil {
			_ = c.Close()
			t.Fatalf("Dial %s succeeded", redis.Redact(u))
		}
		if !redis.IsAuthError(err) || !errors.Is(err, baton.ErrPermission) || !strings.Contains(err.Error(), "authentication") {
			t.Fatalf("Dial %s: want a clear authentication error (baton.ErrPermission), got %v", redis.Redact(u), err)
		}
		if secret != "" && strings.Contains(err.Error(), secret) {
			t.Fatalf("error leaks the password: %v", err)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("wrong password took %v to fail", el)
		}
	}
	// Redlock: one master refusing our credentials fails the whole dial.
	_, err := redis.DialRedlock(ctx, []string{"redis://:default-pw@" + srv.Addr(), "redis://:Wrong-Secret-3@" + srv.Addr()})
	if !redis.IsAuthError(err) || !errors.Is(err, baton.ErrPermission) || strings.Contains(err.Error(), "Wrong-Secret-3") {
		t.Fatalf("DialRedlock with a wrong password: %v", err)
	}
}

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"redis://alice:secret@h:6379/2": "redis://alice:xxxxx@h:6379/2",
		"rediss://:secret@h:6380":       "rediss://:xxxxx@h:6380",
		"redis://h:6379":                "redis://h:6379",
		"redis://a:sec ret@h:bad":       "redis://a:xxxxx@h:bad",
	}
	for in, want := range cases {
		if got := redis.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	ctx := context.Background()
	if _, err := redis.Dial(ctx, "redis://a:topsecret@h:notaport"); err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("bad URL error: %v", err)
	}
}

func TestDialTLS(t *testing.T) {
	srv := redistest.Start(t, redistest.Config{TLS: true, Users: []string{"bob on >bob-pw ~* &* +@all"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := "rediss://bob:bob-pw@" + srv.Addr() + "?ca_file=" + srv.CAFile()
	c, err := redis.Dial(ctx, u)
	if err != nil {
		t.Fatalf("Dial %s: %v", redis.Redact(u), err)
	}
	defer c.Close()
	m := redis.NewMutex(c, freshKey(t), redis.WithTTL(time.Second)) // as in TestDialAuth
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// Without our CA the server's certificate is refused; plain TCP is
	// refused by the server.
	for _, bad := range []string{"rediss://bob:bob-pw@" + srv.Addr(), "redis://bob:bob-pw@" + srv.Addr()} {
		if c, err := redis.Dial(ctx, bad); err == nil {
			_ = c.Close()
			t.Fatalf("Dial %s succeeded", redis.Redact(bad))
		} else if strings.Contains(err.Error(), "bob-pw") {
			t.Fatalf("error leaks the password: %v", err)
		}
	}
}
