package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/redis"
)

// A lock name is its key as written, as redsync's: "nightly-report" and
// "/nightly-report" are two keys (baton.CleanName's rule).
func TestKeyOfName(t *testing.T) {
	for _, name := range []string{"nightly-report", "/nightly-report", "/jobs/x", "jobs/x", "a:b"} {
		if got := redis.NewMutex(nil, name).Key(); got != name {
			t.Errorf("NewMutex(%q).Key() = %q, want it as written", name, got)
		}
		if got := redis.NewRedlock(nil, name).Key(); got != name {
			t.Errorf("NewRedlock(%q).Key() = %q, want it as written", name, got)
		}
	}
}

func TestCheckKey(t *testing.T) {
	for _, k := range []string{"nightly-report", "a:b", "locks/x", "ü", "a:tokens", strings.Repeat("k", redis.MaxKeyLen)} {
		if err := redis.CheckKey(k); err != nil {
			t.Errorf("CheckKey(%.20q): %v", k, err)
		}
	}
	for _, k := range []string{"", "/", "a//b", "/a/../b", "./a", "a/", "\U0001f600", "a\nb", "a\x00", "a\u0085", "\xff", "a:token", "x:queue", "x:waiting", "x:release",
		strings.Repeat("k", redis.MaxKeyLen+1)} {
		if err := redis.CheckKey(k); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("CheckKey(%.20q) = %v, want ErrInvalidName", k, err)
		}
	}
}

// A lock with a bad name fails before any command is sent: the client's
// server is never dialed.
func TestLockRejectsBadKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	defer rc.Close() // NewClient does not take rc over
	c := redis.NewClient(rc)
	defer c.Close()
	if _, err := redis.NewMutex(c, "build:token").Lock(ctx); !errors.Is(err, baton.ErrInvalidName) {
		t.Errorf("mutex: %v, want ErrInvalidName", err)
	}
	if _, err := redis.NewRedlock(redis.NewQuorum(c), "a\nb").TryLock(ctx); !errors.Is(err, baton.ErrInvalidName) {
		t.Errorf("redlock: %v, want ErrInvalidName", err)
	}
}

func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{"k", "", "a:token", "a\x00", "\xff", "x:queue:token", "a:b:release"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		err := redis.CheckKey(k)
		if err != nil {
			if !errors.Is(err, baton.ErrInvalidName) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("CheckKey(%q): %q is not one ErrInvalidName line", k, err)
			}
			return
		}
		if k == "" || len(k) > redis.MaxKeyLen || !utf8.ValidString(k) || strings.IndexFunc(k, unicode.IsControl) >= 0 {
			t.Fatalf("CheckKey accepted %q", k)
		}
		// The key is the name as written.
		if key := redis.NewMutex(nil, k).Key(); key != k {
			t.Fatalf("name %q has key %q", k, key)
		}
		for _, s := range []string{":token", ":queue", ":waiting", ":release"} {
			if strings.HasSuffix(k, s) {
				t.Fatalf("CheckKey accepted %q, a key of lock %q", k, strings.TrimSuffix(k, s))
			}
		}
	})
}
