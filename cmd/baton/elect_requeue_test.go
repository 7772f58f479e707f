package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/internal/proxy"
)

// TestElectRequeue: two `baton elect --requeue` candidates take turns,
// each running CMD once per turn (BATON_TURN counts them); a candidate cut
// off from the store has its CMD stopped before the other leads, campaigns
// again on a new session once the store is back, and leads again; the
// observer sees every leader in order and "no leader" once both are
// stopped by a signal.
func TestElectRequeue(t *testing.T) {
	t.Parallel()
	for _, st := range testStores {
		if !st.sessions || !runsOn(t, st) {
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			addr := st.start(t)[0]
			px := proxy.Start(t, addr)
			electRequeue(t, env("BATON_STORE="+st.url([]string{addr})), env("BATON_STORE="+st.url([]string{px.Addr()})), px)
		})
	}
}

func electRequeue(t *testing.T, direct, viaProxy []string, px *proxy.Proxy) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	// Each turn's CMD logs its start ("A 1" for A's first turn), then a
	// tick ("A1 .") every 20 ms until its release file (dir/A1) exists.
	cmd := func(who string) []string {
		return []string{"sh", "-c", `echo "$1 $BATON_TURN" >> "$0/log"; ` +
			`while [ ! -e "$0/$1$BATON_TURN" ]; do echo "$1$BATON_TURN ." >> "$0/log"; sleep 0.02; done`, dir, who}
	}
	release := func(file string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	obs := start(t, direct, "elect", "--observe", "--json", "/rq")
	obs.waitOutput(`"leader":false`, 10*time.Second)
	a := start(t, viaProxy, append([]string{"elect", "--requeue", "--ttl", "2s", "--dial-timeout", "1s", "/rq", "--value", "A", "--"}, cmd("A")...)...)
	proctest.WaitFile(t, log, "A 1\n", 10*time.Second)
	b := start(t, direct, append([]string{"elect", "--requeue", "--ttl", "2s", "/rq", "--value", "B", "--"}, cmd("B")...)...)
	waitStatus(t, direct, "/rq", 2)

	release("A1") // A's turn ends: B leads, A queues again
	proctest.WaitFile(t, log, "B 1\n", 10*time.Second)
	release("B1")
	proctest.WaitFile(t, log, "A 2\n", 10*time.Second)

	px.Cut() // A loses its leadership: its CMD is stopped, then B leads
	proctest.WaitFile(t, log, "B 2\n", 30*time.Second)
	px.Heal() // A campaigns again on a new session, behind B
	waitStatus(t, direct, "/rq", 2)
	release("B2")
	proctest.WaitFile(t, log, "A 3\n", 30*time.Second)
	got, _ := os.ReadFile(log)
	var turns []string
	ticked := false // A's second turn ticked after B's second began
	for _, l := range strings.Split(strings.TrimSpace(string(got)), "\n") {
		switch {
		case !strings.HasSuffix(l, " ."):
			turns = append(turns, l)
		case l == "A2 ." && slices.Contains(turns, "B 2"):
			ticked = true
		}
	}
	if s := strings.Join(turns, ","); s != "A 1,B 1,A 2,B 2,A 3" || ticked {
		t.Fatalf("turns %q (A's CMD ran on into B's turn: %v), want A 1,B 1,A 2,B 2,A 3 one at a time", s, ticked)
	}
	// Its CMD dies of the grace's SIGTERM, before the loss itself.
	if msg := a.stderr.String(); !strings.Contains(msg, "in jeopardy while CMD ran") && !strings.Contains(msg, "lost while CMD ran") {
		t.Fatalf("A's stderr does not report the loss: %q", a.stderr.String())
	}

	// B waits: a signal ends it (128+n); A's CMD gets the signal and
	// A exits with CMD's status (CMD died of the SIGTERM: 143).
	b.signal(syscall.SIGTERM)
	if code := b.wait(10 * time.Second); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("B exit %d; stderr %q", code, b.stderr.String())
	}
	a.signal(syscall.SIGTERM)
	if code := a.wait(10 * time.Second); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("A exit %d, want CMD's 9; stderr %q", code, a.stderr.String())
	}
	var leaders []string
	noLeader := false
	deadline := time.Now().Add(10 * time.Second)
	for !noLeader && time.Now().Before(deadline) {
		leaders, noLeader = observed(t, obs.stdout.String())
		<-time.After(20 * time.Millisecond) // poll interval
	}
	if got := strings.Join(leaders, ","); got != "A,B,A,B,A" || !noLeader {
		t.Fatalf("observer saw leaders %q (no leader at the end: %v), want A,B,A,B,A then none", got, noLeader)
	}
	obs.signal(syscall.SIGINT)
	obs.wait(10 * time.Second)
}

// observed reads `elect --observe --json` output: the successive leaders'
// values (a leader reported twice in a row counts once) and whether the
// last line says nobody leads.
func observed(t *testing.T, out string) ([]string, bool) {
	t.Helper()
	var leaders []string
	last := true
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l leaderLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			continue // a line being written
		}
		last = !l.Leader
		if l.Leader && (len(leaders) == 0 || leaders[len(leaders)-1] != l.Value) {
			leaders = append(leaders, l.Value)
		}
	}
	return leaders, last && len(leaders) > 0
}
