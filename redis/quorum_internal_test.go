package redis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/await"
)

func TestTrustRunID(t *testing.T) {
	s := &server{}
	const ttl = 50 * time.Millisecond
	if s.trusted(ttl) {
		t.Fatal("master never seen trusted")
	}
	s.saw("a", time.Hour)
	if !s.trusted(ttl) {
		t.Fatal("first sight of an old master not trusted")
	}
	s.saw("b", time.Hour)
	if s.trusted(ttl) {
		t.Fatal("changed run_id trusted at once")
	}
	await.Until(t, 5*time.Second, "a changed run_id to be trusted again", func() bool { return s.trusted(ttl) })
	s.saw("b", 0)
	if !s.trusted(ttl) {
		t.Fatal("a later reading of the same run_id (uptime in whole seconds) undid the trust")
	}
	young := &server{}
	young.saw("c", 0)
	if young.trusted(ttl) {
		t.Fatal("master up for less than a ttl trusted")
	}
	young.saw("", time.Hour)
	if young.trusted(ttl) {
		t.Fatal("an answer without run_id made a young master trusted")
	}
}

// An uptime_in_seconds of 1 may be a server up for a millisecond (the
// difference of two truncated wall-clock times): not trusted for a ttl
// of a second until that second has passed here.
func TestTrustUptimeRounding(t *testing.T) {
	s := &server{}
	s.saw("a", time.Second)
	if s.trusted(time.Second) {
		t.Fatal("uptime 1s trusted at once for a ttl of 1s")
	}
	if g := s.guard(time.Second); g.left < 900*time.Millisecond {
		t.Fatalf("uptime 1s: %v left of a 1s ttl, want about all of it", g.left)
	}
	s.saw("a", 3*time.Second)
	if !s.trusted(time.Second) {
		t.Fatal("uptime 3s (more than 2s up) not trusted for a ttl of 1s")
	}
}

func TestParseInfo(t *testing.T) {
	id, up := parseInfo("# Server\r\nredis_version:7.0.15\r\nrun_id:abc123\r\nuptime_in_seconds:42\r\n")
	if id != "abc123" || up != 42*time.Second {
		t.Fatalf("parseInfo = %q, %v", id, up)
	}
}

func TestGuardNote(t *testing.T) {
	const ttl = 6 * time.Second
	s := &server{}
	if n := s.guardNote("redis://h:1", ttl); n != "" {
		t.Fatalf("a server never read: %q, want no note", n)
	}
	s.saw("a", 0)
	if n := s.guardNote("redis://h:1", ttl); !strings.HasPrefix(n, "redis://h:1 has been up for 0s, less than a TTL: it may have restarted and lost keys; locks on it wait until a TTL (6s) has passed: 6s left") {
		t.Fatalf("young server: %q", n)
	}
	s.saw("a", time.Hour)
	if n := s.guardNote("redis://h:1", ttl); n != "" {
		t.Fatalf("old server: %q, want no note", n)
	}
	s.saw("b", 0)
	if n := s.guardNote("master redis://h:1", ttl); n != "master redis://h:1 restarted 0s ago (run_id changed); locks on it wait until a TTL (6s) has passed: 6s left" {
		t.Fatalf("restarted server: %q", n)
	}
	blind := &server{}
	blind.saw("", time.Hour)
	if n := blind.guardNote("redis://h:1", ttl); !strings.Contains(n, "gives no run_id") {
		t.Fatalf("server without run_id: %q", n)
	}
}

func TestFloors(t *testing.T) {
	var f floors
	f.raise("k", 5)
	f.raise("k", 3)
	if got := f.get("k"); got != 5 {
		t.Fatalf("floor %d after 5 and 3, want 5", got)
	}
	for i := range maxWaited + 10 {
		f.raise(fmt.Sprint("other", i), 1)
	}
	if len(f.m) > maxWaited {
		t.Fatalf("%d keys remembered, want at most %d", len(f.m), maxWaited)
	}
}
