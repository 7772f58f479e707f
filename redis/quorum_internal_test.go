package redis

import (
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

func TestParseInfo(t *testing.T) {
	id, up := parseInfo("# Server\r\nredis_version:7.0.15\r\nrun_id:abc123\r\nuptime_in_seconds:42\r\n")
	if id != "abc123" || up != 42*time.Second {
		t.Fatalf("parseInfo = %q, %v", id, up)
	}
}
