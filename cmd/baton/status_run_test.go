package main

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/redistest"
)

func TestStatusJSON(t *testing.T) {
	t.Parallel()
	e, u := etcdEnv(t)
	holder := startHeld(t, e, "lock", "st")
	waiter := start(t, e, "lock", "st", "--", "true")
	waitStatus(t, e, "st", 2)

	out, stderr, code := run(t, e, "status", "--json", "st")
	if code != 0 {
		t.Fatalf("exit %d %q", code, stderr)
	}
	var rep statusReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if rep.Name != "st" || rep.Store != u || rep.Holders != 1 || rep.Waiters != 1 || len(rep.Entries) != 2 {
		t.Fatalf("report %+v", rep)
	}
	h, w := rep.Entries[0], rep.Entries[1]
	if h.Role != "holder" || w.Role != "waiter" || h.Session == "" || h.Session == w.Session || h.Token >= w.Token {
		t.Fatalf("nodes %+v", rep.Entries)
	}
	holder.signal(2)
	if code := waiter.wait(10 * time.Second); code != 0 {
		t.Fatalf("waiter exit %d", code)
	}
	out, _, _ = run(t, e, "status", "st")
	if want := "st on " + u + ": 0 holding, 0 waiting\n  (no nodes)\n"; out != want {
		t.Fatalf("status %q, want %q", out, want)
	}
}

func TestStatusRedis(t *testing.T) {
	t.Parallel()
	for _, st := range testStores {
		if st.sessions || !runsOn(t, st) {
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			addrs := st.start(t)
			e := env("BATON_STORE=" + st.url(addrs))
			holder := startHeld(t, e, "lock", "--ttl", "2s", "rs")
			waiter := start(t, e, "lock", "--ttl", "2s", "rs", "--", "true")
			// Waiters queue in K:queue, on every master for Redlock.
			want, nodes := 1, len(addrs)+1
			if st.scheme == "redlock" {
				nodes = 2 * len(addrs)
			}
			var rep statusReport
			deadline := time.Now().Add(10 * time.Second)
			// A Redlock waiter joins the masters' lines one by one: wait
			// until it is on all of them, not only the first.
			for first := true; first || rep.Waiters != want || len(rep.Entries) != nodes; first = false {
				out, stderr, code := run(t, e, "status", "--json", "rs")
				if code != 0 {
					t.Fatalf("status: %d %q", code, stderr)
				}
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatalf("%v: %q", err, out)
				}
				if time.Now().After(deadline) {
					t.Fatalf("status never showed the waiter on every server: %q", out)
				}
				<-time.After(20 * time.Millisecond) // poll interval
			}
			if rep.Holders != 1 || rep.Entries[0].Role != "holder" || rep.Entries[0].Session == "" ||
				len(rep.Entries) != nodes {
				t.Fatalf("report %+v", rep)
			}
			// NODE names the keys as redis-cli shows them: rs, rs:queue
			// (the name without its leading /).
			for _, en := range rep.Entries {
				if key := map[string]string{"holder": "rs@", "waiter": "rs:queue@"}[en.Role]; !strings.HasPrefix(en.Node, key) {
					t.Errorf("%s node %q, want the key %s…", en.Role, en.Node, key)
				}
			}
			holder.signal(2)
			if code := waiter.wait(10 * time.Second); code != 0 {
				t.Fatalf("waiter exit %d", code)
			}
		})
	}
}

// TestStatusRedisIdentityHeldWatch: on Redis and Redlock, status names
// the holder and the waiter (host, pid, command from the lock's value),
// with the holder's age and TTL left; --held answers by exit status, and
// --watch redraws when the holder comes and goes.
func TestStatusRedisIdentityHeldWatch(t *testing.T) {
	t.Parallel()
	for _, st := range testStores {
		if st.sessions || !runsOn(t, st) {
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			e := env("BATON_STORE=" + st.url(st.start(t)))
			const name = "rid"
			if _, _, code := run(t, e, "status", "--held", name); code != exitNotHeld {
				t.Fatalf("--held on a free lock: exit %d, want %d", code, exitNotHeld)
			}
			w := start(t, e, "status", "--watch", "--json", name)
			w.waitOutput(`"holders":0`, 10*time.Second)
			holder := start(t, e, "lock", "--ttl", "2s", name)
			holder.waitOutput("BATON_TOKEN=", 20*time.Second)
			w.waitOutput(`"holders":1`, 10*time.Second)
			waiter := start(t, e, "lock", "--ttl", "2s", name, "--", "true")
			rep := waitReport(t, e, name, "a holder and a waiter", counts(1, 1), holder, waiter)
			host, _ := os.Hostname()
			var sawHolder, sawWaiter bool
			for _, x := range rep.Entries {
				switch x.Role {
				case "holder":
					sawHolder = true
					if x.PID != holder.cmd.Process.Pid || x.Host != host || x.Cmd != "baton lock "+name || x.Peer != "baton" ||
						x.Age < 0 || x.TTL <= 0 || x.TTL > 2*time.Second || !strings.HasPrefix(x.Identity, host+" pid ") {
						t.Errorf("holder entry %+v", x)
					}
				case "waiter":
					sawWaiter = true
					if x.PID != waiter.cmd.Process.Pid || x.Cmd != "baton lock "+name {
						t.Errorf("waiter entry %+v", x)
					}
				}
			}
			if !sawHolder || !sawWaiter {
				t.Fatalf("entries %+v", rep.Entries)
			}
			if _, _, code := run(t, e, "status", "--held", name); code != 0 {
				t.Fatalf("--held on a held lock: exit %d", code)
			}
			holder.signal(syscall.SIGINT)
			for _, p := range []*proc{holder, waiter} {
				if code := p.wait(15 * time.Second); code != 0 {
					t.Fatalf("lock exit %d: %q", code, p.stderr.String())
				}
			}
			stopWatchAfterRelease(t, w)
		})
	}
}

// On Redis, --watch redraws on a change of holders, not as the holder's
// age and TTL count on.
func TestStatusRedisWatchQuietWhileUnchanged(t *testing.T) {
	t.Parallel()
	e := env("BATON_STORE=redis://" + redistest.Start(t, redistest.Config{}).Addr())
	holder := startHeld(t, e, "lock", "--ttl", "5s", "quiet")
	w := start(t, e, "status", "--watch", "--json", "quiet")
	w.waitOutput(`"holders":1`, 10*time.Second)
	// Several polls (every 250 ms) of an unchanged lock: no redraw. The
	// marker lock's release below bounds the wait by an event.
	marker := start(t, e, "lock", "--ttl", "5s", "quiet-marker", "--", "sleep", "1.5")
	if code := marker.wait(15 * time.Second); code != 0 {
		t.Fatalf("marker exit %d", code)
	}
	if n := strings.Count(w.stdout.String(), "\n"); n != 1 {
		t.Fatalf("--watch printed %d reports of an unchanged lock: %q", n, w.stdout.String())
	}
	holder.signal(syscall.SIGINT)
	w.waitOutput(`"holders":0`, 10*time.Second)
	w.signal(syscall.SIGINT)
	if code := w.wait(10 * time.Second); code != 0 {
		t.Fatalf("status --watch exit %d", code)
	}
}

// stopWatchAfterRelease waits until `status --watch --json` w has drawn
// "holders":0 again after the holders it showed released (10 s at the
// most), then stops it and wants exit 0.
func stopWatchAfterRelease(t *testing.T, w *proc) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(w.stdout.String(), `"holders":0`) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("--watch did not redraw after the release: %q", w.stdout.String())
		}
		<-time.After(20 * time.Millisecond) // poll interval
	}
	w.signal(syscall.SIGINT)
	if code := w.wait(10 * time.Second); code != 0 {
		t.Fatalf("status --watch exit %d: %q", code, w.stderr.String())
	}
}
