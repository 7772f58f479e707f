package main

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/zktest"
)

// checkDemo asserts a demo run that kept every promise, with sessions of
// ttl.
func checkDemo(t *testing.T, out, stderr string, code int, ttl string) {
	t.Helper()
	if code != 0 {
		t.Fatalf("demo exit %d; stderr %q; stdout:\n%s", code, stderr, out)
	}
	for _, want := range []string{
		"\n  overlaps: 0\n",
		"acquisition order (FIFO: tokens strictly increase in grant order):\n    w",
		"each exactly once: yes",
		"left together: yes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	for _, re := range []string{
		`watch notifications per release: (0\.\d\d|1\.00) \(\d+ notifications, \d+ releases\)`,
		`leader failover: [0-9.]+m?s \(w\d killed with SIGKILL, w\d took over; session TTL ` + ttl + `\)`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("demo output does not match %s:\n%s", re, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > maxDemoLine {
			t.Errorf("demo output has a line of %d characters (over %d): %q", n, maxDemoLine, l)
		}
	}
	t.Logf("demo output:\n%s", out)
}

// maxDemoLine bounds the demo's lines: its acquisition order was one line
// of 3 characters per grant (3,000 with --rounds 200).
const maxDemoLine = 120

func TestDemoEmbedded(t *testing.T) {
	t.Parallel()
	// Without --store and $BATON_STORE the demo embeds its own etcd.
	out, stderr, code := run(t, env(), "demo")
	if !strings.HasPrefix(out, "baton demo: embedded etcd on 127.0.0.1:") {
		t.Errorf("output starts %q", out[:min(len(out), 80)])
	}
	checkDemo(t, out, stderr, code, "2s")
}

// TestDemoZooKeeper: on ZooKeeper the demo's sessions are 4s, the shortest
// a server with the default tickTime grants (it refuses the 2s used
// elsewhere), and long enough that a busy machine does not lose them.
func TestDemoZooKeeper(t *testing.T) {
	t.Parallel()
	addr := zktest.Shared(t).Addr()
	// $BATON_STORE names the store, as for every command.
	out, stderr, code := run(t, env("BATON_STORE=zk://"+addr), "demo", "--workers", "3", "--rounds", "4")
	checkDemo(t, out, stderr, code, "4s")
}

// TestDemoBadDurations: a --ttl or --dial-timeout out of range is a usage
// error before the demo starts its embedded etcd (it started one, printed
// its address, then refused the TTL).
func TestDemoBadDurations(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"demo", "--ttl", "0"}, {"demo", "--dial-timeout", "0"}} {
		out, stderr, code := run(t, env(), args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(stderr, "baton: demo: --") {
			t.Errorf("baton %q: exit %d, stdout %q, stderr %q; want %d, nothing on stdout and one usage line", args, code, out, stderr, exitUsage)
		}
	}
}
