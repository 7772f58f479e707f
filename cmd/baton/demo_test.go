package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
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

// TestDemoOrderLines: the acquisition order is wrapped to 78 columns and,
// past 64 grants, shows the first 40 and the last 24 around a count of
// the rest: a few lines whatever --rounds and --workers are.
func TestDemoOrderLines(t *testing.T) {
	for _, n := range []int{1, 30, 64, 65, 1000, 100000} {
		order := make([]string, n)
		for i := range order {
			order[i] = fmt.Sprintf("w%d", i%12+1)
		}
		lines := orderLines(order)
		joined := strings.Join(lines, " ")
		words := strings.Fields(joined)
		for _, l := range lines {
			if utf8.RuneCountInString(l) > 78 || !strings.HasPrefix(l, "    w") && !strings.HasPrefix(l, "    …") {
				t.Errorf("%d grants: line %q", n, l)
			}
		}
		switch {
		case n <= 64 && (len(words) != n || words[0] != "w1" || words[n-1] != order[n-1]):
			t.Errorf("%d grants: not all shown: %q", n, lines)
		case n > 64 && (len(lines) > 6 || !strings.Contains(joined, fmt.Sprintf(" … %d more … ", n-64)) ||
			words[0] != "w1" || words[len(words)-1] != order[n-1]):
			t.Errorf("%d grants: %q", n, lines)
		}
	}
}

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

// TestDemoProgress: progress lines come a tenth of the total apart, so a
// long run prints at most nine (--rounds 200 printed one every 250 ms, a
// hundred and more); and the lock phase's bound grows with the
// acquisitions asked for.
func TestDemoProgress(t *testing.T) {
	for _, total := range []int{1, 5, 30, 40, 1000, 100000} {
		lines, last := 0, 0
		for n := 0; n <= total; n++ {
			if progressDue(n, last, total) {
				lines, last = lines+1, n
			}
		}
		if lines > 9 || total >= 20 && lines < 5 {
			t.Errorf("%d in all: %d progress lines", total, lines)
		}
	}
	if lockPhaseLimit(30) != 45*time.Second || lockPhaseLimit(1000) < 100*time.Second {
		t.Errorf("lock phase limits %v for 30 acquisitions, %v for 1000", lockPhaseLimit(30), lockPhaseLimit(1000))
	}
}
