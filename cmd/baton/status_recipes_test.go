package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/layout"
)

// pollStatus runs `status --json NAME` until ok accepts the report.
func pollStatus(t *testing.T, e []string, name string, ok func(statusReport) bool) statusReport {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, stderr, code := run(t, e, "status", "--json", name)
		if code != 0 {
			t.Fatalf("status: exit %d %q", code, stderr)
		}
		var rep statusReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %q", err, out)
		}
		if ok(rep) {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed the state: %s", out)
		}
		<-time.After(20 * time.Millisecond) // poll interval
	}
}

// TestStatusSemaphore: semaphore leases are holders with the holder's
// identity (the baton process's pid), age and TTL left; the line for
// admission waits; the number of permits recorded in NAME/permits shows;
// --held answers by exit status.
func TestStatusSemaphore(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		name := "/st-sem-" + st.name
		if _, _, code := run(t, e, "status", "--held", name); code != exitNotHeld {
			t.Fatalf("--held on a free name: exit %d, want %d", code, exitNotHeld)
		}
		a := startHeld(t, e, "semaphore", "-n", "2", name)
		b := startHeld(t, e, "semaphore", "-n", "2", name)
		c := start(t, e, "semaphore", "-n", "2", name, "--", "true")
		rep := pollStatus(t, e, name, func(r statusReport) bool { return r.Holders == 2 && r.Waiters == 1 })
		if !rep.Held || len(rep.Recipes) != 1 || rep.Recipes[0] != layout.RecipeSemaphore || rep.Permits != 2 {
			t.Fatalf("report %+v", rep)
		}
		pids := map[int]bool{a.cmd.Process.Pid: true, b.cmd.Process.Pid: true}
		for _, n := range rep.Entries {
			if n.Role == layout.RoleForeign {
				t.Errorf("a semaphore's own node shown as foreign: %+v", n)
			}
			if n.Role != layout.RoleHolder {
				continue
			}
			if !pids[n.PID] || n.Host == "" || n.Cmd != "baton semaphore "+name || n.Peer != layout.PeerBaton || n.Age < 0 || n.TTL <= 0 || n.TTL > 10*time.Second {
				t.Errorf("holder %+v", n)
			}
			delete(pids, n.PID)
		}
		if len(pids) != 0 {
			t.Errorf("holders %v not shown: %+v", pids, rep.Entries)
		}
		if _, _, code := run(t, e, "status", "--held", name); code != 0 {
			t.Fatalf("--held on a held semaphore: exit %d", code)
		}
		out, _, _ := run(t, e, "status", name)
		if !strings.Contains(out, "2 holding, 1 waiting") || !strings.Contains(out, "  semaphore of 2\n") ||
			!strings.Contains(out, " pid ") {
			t.Errorf("text status %q", out)
		}
		a.signal(syscall.SIGINT)
		b.signal(syscall.SIGINT)
		for _, p := range []*proc{a, b, c} {
			if code := p.wait(15 * time.Second); code != 0 {
				t.Fatalf("semaphore exit %d", code)
			}
		}
		pollStatus(t, e, name, func(r statusReport) bool { return !r.Held })
		if _, _, code := run(t, e, "status", "--held", name); code != exitNotHeld {
			t.Fatalf("--held after release: exit %d", code)
		}
	})
}

// TestStatusElectionQueueBarrier: the leader and its value, a candidate
// behind it, queue items, and a set barrier. Candidates and items are
// baton's own, so never foreign: their writer is unknown (their data is a
// value, a payload), with the age the store records.
func TestStatusElectionQueueBarrier(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		name := "/st-el-" + st.name
		l := start(t, e, "elect", name, "--value", "first")
		l.waitOutput("BATON_", 10*time.Second)
		c := start(t, e, "elect", name, "--value", "second", "--", "true")
		rep := pollStatus(t, e, name, func(r statusReport) bool { return r.Holders == 1 && r.Waiters == 1 })
		if rep.Entries[0].Role != layout.RoleLeader || rep.Entries[0].Value != "first" ||
			rep.Entries[1].Role != layout.RoleCandidate || rep.Entries[1].Value != "second" || rep.Recipes[0] != layout.RecipeElection {
			t.Fatalf("election %+v", rep)
		}
		// A candidate's data is its value: who wrote it is unknown, not
		// foreign; ZooKeeper records its age (etcd keeps no times).
		for _, n := range rep.Entries {
			if n.Identity != layout.IdentityUnknown || st.name == "zk" && n.Age < 0 {
				t.Errorf("baton's own candidate shown as %q, age %v: %+v", n.Identity, n.Age, n)
			}
		}
		if out, _, _ := run(t, e, "status", name); strings.Contains(out, "foreign") || !strings.Contains(out, "unknown") {
			t.Errorf("text status of an election %q", out)
		}
		l.signal(syscall.SIGINT)
		for _, p := range []*proc{l, c} {
			if code := p.wait(15 * time.Second); code != 0 {
				t.Fatalf("elect exit %d", code)
			}
		}

		q := "/st-q-" + st.name
		for _, v := range []string{"a", "b"} {
			if _, stderr, code := run(t, e, "queue", "put", q, v); code != 0 {
				t.Fatalf("put: %d %q", code, stderr)
			}
		}
		rep = pollStatus(t, e, q, func(r statusReport) bool { return r.Items == 2 })
		if rep.Held || rep.Entries[0].Role != layout.RoleItem || rep.Recipes[0] != layout.RecipeQueue {
			t.Fatalf("queue %+v", rep)
		}
		for _, n := range rep.Entries {
			if n.Identity != layout.IdentityUnknown || n.Age < 0 {
				t.Errorf("baton's own queue item shown as %q, age %v: %+v", n.Identity, n.Age, n)
			}
		}

		b := "/st-b-" + st.name
		if _, stderr, code := run(t, e, "barrier", "set", b); code != 0 {
			t.Fatalf("barrier set: %d %q", code, stderr)
		}
		rep = pollStatus(t, e, b, func(r statusReport) bool { return r.BarrierSet })
		if out, _, _ := run(t, e, "status", b); !strings.Contains(out, "barrier (set)") {
			t.Fatalf("barrier status %q", out)
		}
	})
}

// TestStatusWatch: --watch prints the state, then again when a holder
// comes and goes, through the store's watches.
func TestStatusWatch(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		name := "/st-watch-" + st.name
		w := start(t, e, "status", "--watch", "--json", name)
		w.waitOutput(`"holders":0`, 10*time.Second)
		h := startHeld(t, e, "lock", name)
		w.waitOutput(`"holders":1`, 10*time.Second)
		h.signal(syscall.SIGINT)
		if code := h.wait(10 * time.Second); code != 0 {
			t.Fatalf("lock exit %d", code)
		}
		stopWatchAfterRelease(t, w)
	})
}
