package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// statusOf runs `baton status --json name`.
func statusOf(t *testing.T, e []string, name string) statusReport {
	t.Helper()
	out, stderr, code := run(t, e, "status", "--json", name)
	if code != 0 {
		t.Fatalf("status: exit %d %q", code, stderr)
	}
	var rep statusReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status: %v: %q", err, out)
	}
	return rep
}

// waitReport polls `baton status --json name` until ok holds (10 s). On
// failure it shows the state of the processes ps.
func waitReport(t *testing.T, e []string, name, what string, ok func(statusReport) bool, ps ...*proc) statusReport {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rep := statusOf(t, e, name)
		if ok(rep) {
			return rep
		}
		if time.Now().After(deadline) {
			for _, p := range ps {
				select {
				case <-p.done:
					t.Logf("baton %v exited %d: stderr %q", p.cmd.Args[1:], p.code, p.stderr.String())
				default:
					t.Logf("baton %v runs: stderr %q", p.cmd.Args[1:], p.stderr.String())
				}
			}
			t.Fatalf("status of %s never showed %s: %+v", name, what, rep)
		}
		<-time.After(20 * time.Millisecond) // poll interval
	}
}

// counts is a report's holders and waiters.
func counts(h, w int) func(statusReport) bool {
	return func(r statusReport) bool { return r.Holders == h && r.Waiters == w }
}

// gated is a CMD that notes it is in (file tag.in) and stays until the
// test lets it go (file tag.go).
func gated(dir, tag string) []string {
	return []string{"sh", "-c", `: > "$0.in"; while [ ! -e "$0.go" ]; do sleep 0.01; done`, filepath.Join(dir, tag)}
}

// waitExists waits up to 10 s for path to exist.
func waitExists(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !exists(path) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		<-time.After(10 * time.Millisecond) // poll interval
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// `baton lock --shared` holders overlap; `baton lock` (the writer) waits
// for both and excludes them, and a reader arriving while it holds waits.
func TestLockShared(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		dir := t.TempDir()
		const name = "/shared-rw"
		lock := func(shared bool, tag string) *proc {
			args := []string{"lock", "--ttl", "5s", name, "--"}
			if shared {
				args = []string{"lock", "--shared", "--ttl", "5s", name, "--"}
			}
			return start(t, e, append(args, gated(dir, tag)...)...)
		}
		in := func(tag string) string { return filepath.Join(dir, tag+".in") }
		release := func(tag string, p *proc) {
			t.Helper()
			if err := os.WriteFile(filepath.Join(dir, tag+".go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(20 * time.Second); code != 0 {
				t.Fatalf("%s: exit %d, stderr %q", tag, code, p.stderr.String())
			}
		}
		r1, r2 := lock(true, "r1"), lock(true, "r2")
		// Both readers are inside at once: each waits for the other's CMD.
		waitExists(t, in("r1"))
		waitExists(t, in("r2"))
		rep := waitReport(t, e, name, "two readers holding", counts(2, 0))
		for _, x := range rep.Entries {
			if x.Kind != "read" || x.Role != "holder" || !strings.Contains(x.Cmd, "lock --shared") {
				t.Fatalf("reader entry %+v", x)
			}
		}
		w := lock(false, "w")
		waitReport(t, e, name, "the writer waiting behind two readers", counts(2, 1))
		release("r1", r1)
		waitReport(t, e, name, "the writer waiting behind one reader", counts(1, 1))
		if exists(in("w")) {
			t.Fatal("the writer's CMD ran while a reader held")
		}
		release("r2", r2)
		waitExists(t, in("w"))
		r3 := lock(true, "r3")
		waitReport(t, e, name, "a reader waiting behind the writer", counts(1, 1))
		if exists(in("r3")) {
			t.Fatal("a reader's CMD ran while the writer held")
		}
		release("w", w)
		waitExists(t, in("r3"))
		release("r3", r3)
		// --try: a reader is refused while the writer holds.
		w2 := lock(false, "w2")
		waitExists(t, in("w2"))
		_, stderr, code := run(t, e, "lock", "--shared", "--try", name, "--", "true")
		if code != exitTimeout {
			t.Fatalf("lock --shared --try under a writer: exit %d %q, want 75", code, stderr)
		}
		release("w2", w2)
	})
}

// Redis has no read/write lock: --shared is a usage error before dialing.
func TestLockSharedRedisRefused(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"redis://127.0.0.1:1", "redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"} {
		_, stderr, code := run(t, env("BATON_STORE="+u), "lock", "--shared", "x", "--", "true")
		if code != exitUsage || !strings.Contains(stderr, "lock --shared") || !strings.Contains(stderr, "zk://") || strings.Count(stderr, "\n") != 1 {
			t.Fatalf("%s: exit %d stderr %q, want 2 and one line naming zk:// and etcd://", u, code, stderr)
		}
	}
}
