package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/proctest"
)

// TestRevoke: `baton revoke NAME` asks the holder to let go. A holder run
// with --on-revoke term stops CMD (SIGTERM; baton exits with CMD's
// status) and releases, so the next in line runs; with nobody holding,
// revoke exits 3; a holder of several NAMEs is stopped by a request to any
// of them and releases them all; a holder with the default (ignore) keeps
// the lock, and status shows it as a holder asked to let go.
func TestRevoke(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, _ testStore, e []string) {
		log := filepath.Join(t.TempDir(), "log")
		holder := start(t, e, "lock", "--on-revoke", "term", "/rv", "--", "sh", "-c",
			`trap 'echo term >> "$0"; exit 7' TERM; echo ready; while :; do sleep 0.02; done`, log)
		holder.waitOutput("ready", 10*time.Second)
		next := start(t, e, "lock", "/rv", "--", "sh", "-c", `echo next >> "$0"`, log)
		waitStatus(t, e, "/rv", 2)
		out, stderr, code := run(t, e, "revoke", "/rv")
		if code != 0 || !strings.Contains(out, "asked the holder of /rv to let go") {
			t.Fatalf("revoke: exit %d %q %q", code, out, stderr)
		}
		if code := holder.wait(10 * time.Second); code != 7 {
			t.Fatalf("revoked holder: exit %d, want CMD's 7; stderr %q", code, holder.stderr.String())
		}
		if !strings.Contains(holder.stderr.String(), "revoked on request while CMD ran") {
			t.Fatalf("revoked holder's stderr %q", holder.stderr.String())
		}
		if code := next.wait(10 * time.Second); code != 0 {
			t.Fatalf("next: exit %d %q", code, next.stderr.String())
		}
		if got := proctest.WaitFile(t, log, "next", time.Second); got != "term\nnext\n" {
			t.Fatalf("log %q, want the holder's CMD stopped before the next ran", got)
		}
		if _, stderr, code := run(t, e, "revoke", "/rv"); code != exitNotHeld || !strings.Contains(stderr, "nobody holds it") {
			t.Fatalf("revoke with nobody holding: exit %d %q", code, stderr)
		}

		// Several NAMEs: a request to any one stops CMD and releases all.
		multi := start(t, e, "lock", "--on-revoke", "term", "/rvm-a", "/rvm-b", "--", "sh", "-c",
			`trap 'exit 7' TERM; echo ready; while :; do sleep 0.02; done`)
		multi.waitOutput("ready", 10*time.Second)
		if _, stderr, code := run(t, e, "revoke", "/rvm-b"); code != 0 {
			t.Fatalf("revoke /rvm-b: exit %d %q", code, stderr)
		}
		if code := multi.wait(10 * time.Second); code != 7 || !strings.Contains(multi.stderr.String(), "revoked on request while CMD ran") {
			t.Fatalf("revoked multi-lock holder: exit %d, want CMD's 7; stderr %q", code, multi.stderr.String())
		}
		if _, stderr, code := run(t, e, "lock", "--try", "/rvm-a", "/rvm-b", "--", "true"); code != 0 {
			t.Fatalf("after the revoked multi-lock released: --try exit %d %q", code, stderr)
		}

		plain := start(t, e, "lock", "/rv2", "--", "sh", "-c", "echo ready; exec sleep 30")
		plain.waitOutput("ready", 10*time.Second)
		if _, stderr, code := run(t, e, "revoke", "/rv2"); code != 0 {
			t.Fatalf("revoke /rv2: exit %d %q", code, stderr)
		}
		if _, stderr, code := run(t, e, "lock", "--try", "/rv2", "--", "true"); code != exitTimeout {
			t.Fatalf("a holder without --on-revoke term let go: --try exit %d %q", code, stderr)
		}
		// status shows a holder asked to let go, not an election leader
		// whose value is the revoke marker.
		rep := pollStatus(t, e, "/rv2", func(r statusReport) bool { return r.Holders == 1 })
		if h := rep.Entries[0]; len(rep.Recipes) != 1 || rep.Recipes[0] != "mutex" || h.Role != "holder" || !h.RevokeRequested || h.Value != "" {
			t.Errorf("revoked holder in status: %+v", rep)
		}
		if out, _, _ := run(t, e, "status", "/rv2"); !strings.Contains(out, "asked to let go: revoke requested") || strings.Contains(out, "__REVOKE__") {
			t.Errorf("text status of a revoked holder %q", out)
		}
		plain.signal(syscall.SIGTERM)
		plain.wait(10 * time.Second)
	})
}
