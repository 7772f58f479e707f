package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestPermit(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, _ testStore, e []string) { permitRun(t, e) })
}

func permitRun(t *testing.T, e []string) {
	list := func() []permitLine {
		t.Helper()
		out, stderr, code := run(t, e, "permit", "list", "-n", "1", "--json", "/p")
		if code != 0 {
			t.Fatalf("permit list: %d %q", code, stderr)
		}
		var ps []permitLine
		if err := json.Unmarshal([]byte(out), &ps); err != nil {
			t.Fatalf("permit list: %q: %v", out, err)
		}
		return ps
	}
	// A holder whose permit expires is stopped like one that lost it.
	//
	// The time to live bounds how long a baton process takes to start
	// and answer (permit list, permit extend) after the holder printed its
	// permit: that must happen before the permit expires. 4 s was too
	// short on a loaded machine (load 20 and more: "permit extend: not
	// found", the permit expired first); 10 s leaves room. The test waits
	// it out twice, beside the package's other tests.
	const ttl = 10 * time.Second
	began := time.Now()
	a := start(t, e, "semaphore", "-n", "1", "--permit-ttl", ttl.String(), "/p", "--", "sh", "-c", `echo "permit $BATON_PERMIT"; exec sleep 60`)
	a.waitOutput("permit ", 10*time.Second)
	id := strings.TrimSpace(strings.TrimPrefix(a.stdout.String(), "permit "))
	if ps := list(); len(ps) != 1 || ps[0].ID != id || ps[0].TTLms != ttl.Milliseconds() || ps[0].Waiting {
		t.Fatalf("permit list: %+v, want %s", ps, id)
	}
	if code := a.wait(20 * time.Second); code != exitLost {
		t.Fatalf("holder of an expired permit: exit %d, want %d", code, exitLost)
	}
	if el := time.Since(began); el < ttl {
		t.Fatalf("permit ended %v after the holder started, before its time to live", el)
	}
	if ps := list(); len(ps) != 0 {
		t.Fatalf("permit list after expiry: %+v", ps)
	}

	// Extended from another process, it outlives its first time to live;
	// released by id, its holder is stopped.
	b := start(t, e, "semaphore", "-n", "1", "--permit-ttl", ttl.String(), "/p", "--", "sh", "-c", `echo "permit $BATON_PERMIT"; exec sleep 60`)
	b.waitOutput("permit ", 10*time.Second)
	id = strings.TrimSpace(strings.TrimPrefix(b.stdout.String(), "permit "))
	if _, stderr, code := run(t, e, "permit", "extend", "/p", id, "1m"); code != 0 {
		t.Fatalf("permit extend: %d %q", code, stderr)
	}
	extended := time.Now()
	if ps := list(); len(ps) != 1 || ps[0].TTLms != 60000 {
		t.Fatalf("after extend: %+v", ps)
	}
	// The waiter waits past the first time to live: only the extension
	// keeps it out.
	waiter := start(t, e, "semaphore", "-n", "1", "--timeout", (ttl + 2*time.Second).String(), "/p", "--", "true")
	if code := waiter.wait(30 * time.Second); code != exitTimeout {
		t.Fatalf("waiter behind an extended permit: exit %d, want %d", code, exitTimeout)
	}
	if time.Since(extended) < ttl+2*time.Second {
		t.Fatal("waiter gave up early")
	}
	if _, stderr, code := run(t, e, "permit", "release", "/p", id); code != 0 {
		t.Fatalf("permit release: %d %q", code, stderr)
	}
	if code := b.wait(20 * time.Second); code != exitLost {
		t.Fatalf("holder of a permit released by id: exit %d, want %d", code, exitLost)
	}
	if _, _, code := run(t, e, "permit", "extend", "/p", id, "1m"); code == 0 {
		t.Fatal("permit extend of a released permit succeeded")
	}
	for _, bad := range [][]string{
		{"permit", "extend", "/p", id},
		{"permit", "extend", "/p", id, "-1s"},
		{"permit", "release", "/p"},
		{"permit", "extend", "/p", "bogus-id", "5s"}, // a malformed id
		{"permit", "extend", "/p", "lease-x@0", "5s"},
		{"permit", "release", "/p", "bogus-id"},
		{"semaphore", "-n", "1", "--permit-ttl", "-1s", "/p", "--", "true"},
	} {
		if _, _, code := run(t, e, bad...); code != exitUsage {
			t.Fatalf("baton %v: exit %d, want %d", bad, code, exitUsage)
		}
	}
}
