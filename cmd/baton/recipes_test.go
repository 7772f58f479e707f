package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/testenv"
)

func TestElect(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, _ testStore, e []string) { electRun(t, e) })
}

func electRun(t *testing.T, e []string) {
	obs := start(t, e, "elect", "--observe", "--json", "/e")
	obs.waitOutput(`"leader":false`, 10*time.Second)

	a := start(t, e, "elect", "/e", "--value", "A", "--", "sh", "-c", `echo "ready $BATON_ELECTION $BATON_TOKEN"; exec sleep 30`)
	a.waitOutput("ready /e ", 10*time.Second)
	if !regexp.MustCompile(`ready /e [1-9][0-9]*\n`).MatchString(a.stdout.String()) {
		t.Fatalf("CMD env: %q", a.stdout.String())
	}
	// B leads until the test lets it go, so the observer cannot miss it.
	release := filepath.Join(t.TempDir(), "release")
	b := start(t, e, "elect", "/e", "--value", "B", "--", "sh", "-c",
		`echo "B leads"; while [ ! -e "$0" ]; do sleep 0.02; done`, release)
	obs.waitOutput(`"value":"A"`, 10*time.Second)
	if _, stderr, code := run(t, e, "elect", "--timeout", "300ms", "/e", "--", "true"); code != exitTimeout {
		t.Fatalf("third candidate: exit %d %q, want 75", code, stderr)
	}
	// SIGTERM reaches A's CMD; A exits with its status and resigns; B leads.
	a.signal(syscall.SIGTERM)
	if code := a.wait(10 * time.Second); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("A exit %d", code)
	}
	b.waitOutput("B leads\n", 10*time.Second)
	obs.waitOutput(`"value":"B"`, 10*time.Second)
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(10 * time.Second); code != 0 {
		t.Fatalf("B exit %d", code)
	}
	obs.signal(syscall.SIGINT)
	if code := obs.wait(10 * time.Second); code != 0 {
		t.Fatalf("observer exit %d", code)
	}
	var values []string
	for _, line := range strings.Split(strings.TrimSpace(obs.stdout.String()), "\n") {
		var l leaderLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("observer line %q: %v", line, err)
		}
		if l.Leader {
			values = append(values, l.Value)
		}
	}
	if strings.Join(values, ",") != "A,B" {
		t.Fatalf("leaders seen %q, want A then B", values)
	}
}

func TestQueue(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, _ testStore, e []string) { queueRun(t, e) })
}

func queueRun(t *testing.T, e []string) {
	if _, stderr, code := run(t, e, "queue", "put", "/q", "a", "b c"); code != 0 {
		t.Fatalf("put: %d %q", code, stderr)
	}
	p := start(t, e, "queue", "put", "/q")
	// (stdin is /dev/null for start: no items)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("put from empty stdin: %d", code)
	}
	if out, _, code := run(t, e, "queue", "len", "/q"); code != 0 || out != "2\n" {
		t.Fatalf("len: %d %q", code, out)
	}
	for _, want := range []string{"a\n", "b c\n"} {
		if out, stderr, code := run(t, e, "queue", "take", "/q"); code != 0 || out != want {
			t.Fatalf("take: %d %q %q, want %q", code, out, stderr, want)
		}
	}
	if _, _, code := run(t, e, "queue", "take", "--timeout", "200ms", "/q"); code != exitTimeout {
		t.Fatalf("take from empty queue: exit %d, want 75", code)
	}
	// A blocked taker gets the next item.
	taker := start(t, e, "queue", "take", "/q")
	if _, _, code := run(t, e, "queue", "put", "/q", "late"); code != 0 {
		t.Fatal("put late")
	}
	if code := taker.wait(10 * time.Second); code != 0 || taker.stdout.String() != "late\n" {
		t.Fatalf("blocked take: %d %q", code, taker.stdout.String())
	}
}

func TestSemaphore(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, _ testStore, e []string) { semaphoreRun(t, e) })
}

func semaphoreRun(t *testing.T, e []string) {
	h1 := start(t, e, "semaphore", "-n", "2", "/s")
	h2 := start(t, e, "semaphore", "-n", "2", "/s")
	h1.waitOutput("BATON_SEMAPHORE=/s BATON_TOKEN=", 10*time.Second)
	h2.waitOutput("BATON_SEMAPHORE=/s BATON_TOKEN=", 10*time.Second)
	if _, _, code := run(t, e, "semaphore", "-n", "2", "--timeout", "300ms", "/s", "--", "true"); code != exitTimeout {
		t.Fatalf("third holder: exit %d, want 75", code)
	}
	third := start(t, e, "semaphore", "-n", "2", "/s", "--", "sh", "-c", "exit 4")
	h1.signal(syscall.SIGINT)
	if code := third.wait(10 * time.Second); code != 4 {
		t.Fatalf("third exit %d, want CMD's 4", code)
	}
	// -n 5 while a -n 2 holder is inside: refused, CMD not run.
	out, stderr, code := run(t, e, "semaphore", "-n", "5", "/s", "--", "echo", "ran")
	if code != exitUsage || out != "" || stderr != "baton: semaphore /s: -n 5: number of permits differs from the semaphore's: "+
		"/s is a semaphore of 2 permits, not 5 (1 leases held or waited for; the number can change once none is)\n" {
		t.Fatalf("-n 5 beside -n 2: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	// Once nobody is inside, the number can change.
	h2.signal(syscall.SIGINT)
	h2.wait(10 * time.Second)
	if out, stderr, code := run(t, e, "semaphore", "-n", "5", "/s", "--", "echo", "ran"); code != 0 || out != "ran\n" {
		t.Fatalf("-n 5 on the empty semaphore: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if _, stderr, code := run(t, e, "semaphore", "/s", "--", "true"); code != exitUsage || !strings.Contains(stderr, "-n N") {
		t.Fatalf("without -n: %d %q", code, stderr)
	}
}

func TestBarrier(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, _ testStore, e []string) { barrierRun(t, e) })
}

func barrierRun(t *testing.T, e []string) {
	// A barrier never set is not taken for one removed.
	if _, stderr, code := run(t, e, "barrier", "wait", "/t/never"); code != exitNotSet ||
		stderr != "baton: barrier wait /t/never: the barrier is not set (never set, or removed already)\n" {
		t.Fatalf("wait on a barrier never set: exit %d, stderr %q; want %d", code, stderr, exitNotSet)
	}
	if _, stderr, code := run(t, e, "barrier", "set", "/t/b"); code != 0 {
		t.Fatalf("set: %d %q", code, stderr)
	}
	// The waiter runs on a terminal (util-linux script), where it says
	// when it has seen the barrier set: only then is it removed.
	scriptBin, err := exec.LookPath("script")
	testenv.Require(t, "script (util-linux, Debian's bsdutils)", err)
	sh := exec.Command(scriptBin, "-qec", batonBin+" barrier wait /t/b", "/dev/null")
	sh.Env = e
	waiter := startCmd(t, sh)
	waiter.waitOutput("baton: barrier /t/b is set; waiting until it is removed", 30*time.Second)
	if _, _, code := run(t, e, "barrier", "wait", "--timeout", "200ms", "/t/b"); code != exitTimeout {
		t.Fatalf("wait on a set barrier: exit %d, want 75", code)
	}
	if _, _, code := run(t, e, "barrier", "remove", "/t/b"); code != 0 {
		t.Fatal("remove")
	}
	if code := waiter.wait(10 * time.Second); code != 0 {
		t.Fatalf("waiter exit %d: %q", code, waiter.stdout.String())
	}
	if _, _, code := run(t, e, "barrier", "wait", "/t/b"); code != exitNotSet {
		t.Fatalf("wait on a removed barrier: exit %d, want %d", code, exitNotSet)
	}
	var ps []*proc
	for range 3 {
		ps = append(ps, start(t, e, "barrier", "double", "-n", "3", "/d", "--", "sh", "-c", `echo "in $BATON_BARRIER"`))
	}
	for _, p := range ps {
		if code := p.wait(20 * time.Second); code != 0 || p.stdout.String() != "in /d\n" {
			t.Fatalf("double barrier participant: %d %q %q", code, p.stdout.String(), p.stderr.String())
		}
	}
	// -n 5 while a -n 1 participant is inside: refused, CMD not run; the
	// next round may use another number.
	one := start(t, e, "barrier", "double", "-n", "1", "/d2", "--", "sh", "-c", "echo in; sleep 60")
	one.waitOutput("in\n", 20*time.Second)
	out, stderr, code := run(t, e, "barrier", "double", "-n", "5", "/d2", "--", "echo", "ran")
	if code != exitUsage || out != "" || stderr != "baton: barrier double /d2: -n 5: number of participants differs from the double barrier's: "+
		"/d2 is a double barrier of 1 participants, not 5 (the first to enter said so; the number can change once all have left)\n" {
		t.Fatalf("-n 5 beside -n 1: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	one.signal(syscall.SIGTERM)
	one.wait(20 * time.Second)
	ps = nil
	for range 2 {
		ps = append(ps, start(t, e, "barrier", "double", "-n", "2", "/d2", "--", "echo", "in"))
	}
	for _, p := range ps {
		if code := p.wait(20 * time.Second); code != 0 || p.stdout.String() != "in\n" {
			t.Fatalf("a round of 2 after a round of 1: %d %q %q", code, p.stdout.String(), p.stderr.String())
		}
	}
}

func TestServe(t *testing.T) {
	t.Parallel()
	p := start(t, env(), "serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0")
	p.waitOutput("Ctrl-C stops\n", 30*time.Second)
	m := regexp.MustCompile(`etcd serving on (127\.0\.0\.1:\d+)`).FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("serve printed %q", p.stdout.String())
	}
	e := env("BATON_STORE=etcd://" + m[1])
	if out, stderr, code := run(t, e, "lock", "/served", "--", "echo", "ok"); code != 0 || out != "ok\n" {
		t.Fatalf("lock on served etcd: %d %q %q", code, out, stderr)
	}
	if etcdctl, err := exec.LookPath("etcdctl"); err == nil {
		cmd := exec.Command(etcdctl, "--endpoints", m[1], "put", "k", "v")
		cmd.Env = append(env(), "ETCDCTL_API=3")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "OK") {
			t.Fatalf("etcdctl put: %v %q", err, out)
		}
	} else {
		t.Logf("etcdctl not on PATH: skipping its check")
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(20 * time.Second); code != 0 || !strings.Contains(p.stdout.String(), "etcd stopped") {
		t.Fatalf("serve exit %d, stdout %q", code, p.stdout.String())
	}
}

// TestElectLostStopsCmd: a leader cut off from the store has its CMD
// stopped and exits 76 before the next candidate leads.
func TestElectLostStopsCmd(t *testing.T) {
	t.Parallel()
	px := proxy.Start(t, sharedEtcd(t))
	direct := env("BATON_STORE=etcd://" + sharedEtcd(t))
	log := filepath.Join(t.TempDir(), "log")
	leader := start(t, env("BATON_STORE=etcd://"+px.Addr()), "elect", "--ttl", "2s", "/el", "--", "sh", "-c",
		`trap 'echo term >> "$0"' TERM; echo ready; while :; do echo tick >> "$0"; sleep 0.02; done`, log)
	leader.waitOutput("ready", 10*time.Second)
	next := start(t, direct, "elect", "--ttl", "2s", "/el", "--", "sh", "-c", `echo leads >> "$0"`, log)
	px.Cut()
	if code := leader.wait(20 * time.Second); code != exitLost {
		t.Fatalf("leader exit %d, want 76; stderr %q", code, leader.stderr.String())
	}
	if code := next.wait(20 * time.Second); code != 0 {
		t.Fatalf("next exit %d: %q", code, next.stderr.String())
	}
	checkStoppedBefore(t, log, "leads")
}
