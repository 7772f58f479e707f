package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/zktest"
)

// A `queue take` waiting for an item and a `status --watch` survive a
// ZooKeeper outage longer than their sessions (the server down 9 s; a
// session of 10 s is given up after 8 s without contact): each says so,
// opens a new session and goes on, as `lock` waiters rejoin their line.
// The take then gets the item put after the outage, and the watch shows
// the next change. (Both used to exit 1, "session lost".)
func TestQueueTakeAndStatusWatchSurviveOutage(t *testing.T) {
	t.Parallel()
	s := zktest.Start(t)
	e := env("BATON_STORE=zk://" + s.Addr())
	const name = "/q-outage"
	watch := start(t, e, "status", "--watch", "--json", name)
	watch.waitOutput("\n", 20*time.Second)
	take := start(t, e, "queue", "take", "--timeout", "120s", name)
	// Both wait on the queue's children: the take's session and the
	// watch's each hold a child watch on it.
	if !await.Within(20*time.Second, func() bool { return watchers(s, name) >= 2 }) {
		t.Fatalf("the take never waited on %s: wchp %q; take stderr %q", name, fourLetter(s, "wchp"), take.stderr.String())
	}
	if err := s.Restart(9 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitStderr(t, take, "lost its place in line")
	waitStderr(t, take, "reconnected with a new session")
	waitStderr(t, watch, "reconnected with a new session")
	for _, p := range []*proc{take, watch} {
		select {
		case <-p.done:
			t.Fatalf("baton %v exited %d after the outage: stderr %q", p.cmd.Args[1:], p.code, p.stderr.String())
		default:
		}
	}
	if _, stderr, code := run(t, e, "queue", "put", name, "after"); code != 0 {
		t.Fatalf("put: exit %d %q", code, stderr)
	}
	if code := take.wait(60 * time.Second); code != 0 || take.stdout.String() != "after\n" {
		t.Fatalf("take: exit %d, stdout %q, stderr %q", code, take.stdout.String(), take.stderr.String())
	}
	if _, stderr, code := run(t, e, "queue", "put", name, "seen"); code != 0 {
		t.Fatalf("put: exit %d %q", code, stderr)
	}
	watch.waitOutput(`"items":1`, 30*time.Second)
	watch.signal(syscall.SIGINT)
	if code := watch.wait(20 * time.Second); code != 0 {
		t.Fatalf("status --watch: exit %d, stderr %q", code, watch.stderr.String())
	}
	t.Logf("take stderr %q; watch stderr %q", take.stderr.String(), watch.stderr.String())
}

// fourLetter is s's answer to cmd, or the error's text.
func fourLetter(s *zktest.Server, cmd string) string {
	out, err := s.FourLetter(cmd)
	if err != nil {
		return err.Error()
	}
	return out
}

// watchers counts the sessions with a watch on path (ZooKeeper's wchp:
// each path, then its sessions indented).
func watchers(s *zktest.Server, path string) int {
	n, in := 0, false
	for _, l := range strings.Split(fourLetter(s, "wchp"), "\n") {
		switch {
		case strings.HasPrefix(l, "/"):
			in = l == path
		case in && strings.TrimSpace(l) != "":
			n++
		}
	}
	return n
}
