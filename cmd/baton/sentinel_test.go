package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/internal/redistest"
)

// TestLockSentinel runs `baton lock` on a redis-sentinel:// store (a
// master, two replicas, three sentinels): with --replicas 2 it holds, and
// hands over in line; --replicas 3 never holds (the master has two) and
// times out saying why; a master name the sentinels do not know and
// --replicas on a store without replicas are refused. Then the master is
// SIGKILLed while a `baton lock --replicas 2` holds: after the failover a
// new `baton lock` waits until the holder's CMD is done, and its token is
// above the holder's.
func TestLockSentinel(t *testing.T) {
	t.Parallel()
	tp := redistest.StartSentinel(t, 2, 3)
	const ttl = 8 * time.Second
	for _, s := range tp.Servers {
		s.WaitUp(ttl) // the restart guard trusts them
	}
	e := env("BATON_STORE=" + tp.URL())
	for _, name := range []string{"x", "/x", "a/b"} {
		out, stderr, code := run(t, e, "lock", "--replicas", "2", "--ttl", "8s", name, "--", "sh", "-c", `echo "$BATON_TOKEN"`)
		if code != 0 || strings.TrimSpace(out) == "" {
			t.Fatalf("lock %s: exit %d, out %q, stderr %q", name, code, out, stderr)
		}
	}
	// bench measures baton and the WAIT floor on the master.
	if out, stderr, code := run(t, e, "bench", "--replicas", "2", "--ttl", "8s", "--workload", "floor,uncontended", "--duration", "300ms"); code != 0 {
		t.Errorf("bench --replicas 2: exit %d, out %q, stderr %q", code, out, stderr)
	} else {
		t.Logf("bench --replicas 2:\n%s", out)
	}
	// status reads the master the sentinels name.
	if out, stderr, code := run(t, e, "status", "--json", "a/b"); code != 0 || !strings.Contains(out, "a/b") {
		t.Errorf("status a/b: exit %d, out %q, stderr %q", code, out, stderr)
	}
	if _, stderr, code := run(t, e, "lock", "--replicas", "3", "--try", "three", "--", "true"); code != exitTimeout || !strings.Contains(stderr, "acknowledged") {
		t.Errorf("--replicas 3 of 2 --try: exit %d, want %d; stderr %q", code, exitTimeout, stderr)
	}
	_, stderr, code := run(t, e, "lock", "--replicas", "3", "--ttl", "8s", "--timeout", "2s", "three", "--", "true")
	if code != exitTimeout || !strings.Contains(stderr, "acknowledged") {
		t.Errorf("--replicas 3 of 2: exit %d, want %d; stderr %q", code, exitTimeout, stderr)
	}
	nosuch := strings.TrimSuffix(tp.URL(), redistest.MasterName) + "nosuch"
	if _, stderr, code := run(t, e, "lock", "--store", nosuch, "x", "--", "true"); code == 0 || !strings.Contains(stderr, `does not know master "nosuch"`) {
		t.Errorf("unknown master: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := run(t, e, "lock", "--store", "redis-sentinel://"+tp.Sentinels[0].Addr(), "x", "--", "true"); code != exitUsage || !strings.Contains(stderr, "needs a master name") {
		t.Errorf("no master name: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := run(t, e, "lock", "--store", "redlock://"+tp.Servers[0].Addr(), "--replicas", "1", "x", "--", "true"); code != exitUsage || !strings.Contains(stderr, "--replicas needs one Redis master") {
		t.Errorf("--replicas on redlock://: exit %d, stderr %q", code, stderr)
	}

	// The failover.
	log := filepath.Join(t.TempDir(), "log")
	holder := start(t, e, "lock", "--replicas", "2", "--ttl", "8s", "held", "--", "sh", "-c",
		`echo "holder $BATON_TOKEN" >> "$0"; i=0; while [ $i -lt 300 ]; do echo tick >> "$0"; sleep 0.01; i=$((i+1)); done`, log)
	proctest.WaitFile(t, log, "tick", 30*time.Second)
	old := tp.MasterAddr()
	tp.Server(old).Kill()
	now := tp.WaitFailover(old, 30*time.Second)
	if now == "" {
		t.Fatalf("no failover from %s within 30s", old)
	}
	tp.Rejoin(old, now) // a replica again: WAIT 2 can be met
	rc := goredis.NewClient(&goredis.Options{Addr: now})
	defer rc.Close()
	await.Until(t, 10*time.Second, "the holder's key on the new master", func() bool {
		return rc.Exists(context.Background(), "held").Val() == 1
	})
	waiter := start(t, e, "lock", "--replicas", "2", "--ttl", "8s", "held", "--", "sh", "-c", `echo "acquired $BATON_TOKEN" >> "$0"`, log)
	if code := holder.wait(30 * time.Second); code != 0 {
		t.Fatalf("holder exit %d: %q", code, holder.stderr.String())
	}
	if code := waiter.wait(30 * time.Second); code != 0 {
		t.Fatalf("waiter exit %d: %q", code, waiter.stderr.String())
	}
	got, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if !strings.HasPrefix(lines[len(lines)-1], "acquired ") || strings.Count(string(got), "acquired") != 1 {
		t.Fatalf("log %q: the holder's CMD ran after the waiter's", got)
	}
	tokens := map[string]int64{}
	for _, line := range lines {
		if who, tok, ok := strings.Cut(line, " "); ok && who != "tick" {
			tokens[who], _ = strconv.ParseInt(tok, 10, 64)
		}
	}
	if tokens["acquired"] <= tokens["holder"] {
		t.Errorf("tokens: holder %d, then %d after the failover", tokens["holder"], tokens["acquired"])
	}
}
