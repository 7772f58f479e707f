package redis

import (
	"testing"
	"time"
)

func TestTrustRunID(t *testing.T) {
	n := &node{}
	const ttl = 50 * time.Millisecond
	if !n.trust("a", time.Hour, ttl) {
		t.Fatal("first sight of an old master not trusted")
	}
	if n.trust("b", time.Hour, ttl) {
		t.Fatal("changed run_id trusted at once")
	}
	if n.trust("b", time.Hour, ttl) {
		t.Fatal("changed run_id trusted within the ttl")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !n.trust("b", time.Hour, ttl) {
		if time.Now().After(deadline) {
			t.Fatal("changed run_id never trusted again")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n.trust("b", ttl/2, ttl) {
		t.Fatal("master up for less than a ttl trusted")
	}
	if n.trust("", time.Hour, ttl) {
		t.Fatal("answer without run_id trusted")
	}
}

func TestParseInfo(t *testing.T) {
	id, up := parseInfo("# Server\r\nredis_version:7.0.15\r\nrun_id:abc123\r\nuptime_in_seconds:42\r\n")
	if id != "abc123" || up != 42*time.Second {
		t.Fatalf("parseInfo = %q, %v", id, up)
	}
}
