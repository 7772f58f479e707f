package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/proxy"
)

// etcdEnv returns baton's environment pointing at the shared embedded
// etcd, and its URL.
func etcdEnv(t *testing.T) ([]string, string) {
	t.Helper()
	u := "etcd://" + sharedEtcd(t)
	return env("BATON_STORE=" + u), u
}

func TestLockRunsCmdWithEnv(t *testing.T) {
	t.Parallel()
	eachStore(t, false, func(t *testing.T, st testStore, e []string) {
		out, stderr, code := run(t, e, "lock", "--ttl", "2s", "/jobs/nightly", "--", "sh", "-c", `echo "lock=$BATON_LOCK token=$BATON_TOKEN"; exit 3`)
		if code != 3 {
			t.Fatalf("exit %d, want CMD's 3; stderr %q", code, stderr)
		}
		if !regexp.MustCompile(`^lock=/jobs/nightly token=[0-9]+\n$`).MatchString(out) {
			t.Fatalf("CMD saw %q", out)
		}
		if !st.tokens {
			return
		}
		// Tokens grow with each acquisition.
		out2, _, code := run(t, e, "lock", "--ttl", "2s", "/jobs/nightly", "--", "sh", "-c", `echo $BATON_TOKEN`)
		t1, _ := strconv.ParseInt(strings.TrimPrefix(strings.Fields(out)[1], "token="), 10, 64)
		t2, _ := strconv.ParseInt(strings.TrimSpace(out2), 10, 64)
		if code != 0 || t2 <= t1 {
			t.Fatalf("second run exit %d token %d after %d", code, t2, t1)
		}
	})
}

func TestLockCmdNotFound(t *testing.T) {
	t.Parallel()
	e, _ := etcdEnv(t)
	_, stderr, code := run(t, e, "lock", "x", "--", "/nonexistent/cmd")
	if code != 127 || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d stderr %q, want 127 and one line", code, stderr)
	}
}

func TestLockTimeoutDoesNotRunCmd(t *testing.T) {
	t.Parallel()
	eachStore(t, false, func(t *testing.T, _ testStore, e []string) { lockTimeout(t, e) })
}

func lockTimeout(t *testing.T, e []string) {
	holder := start(t, e, "lock", "--ttl", "2s", "/busy")
	holder.waitOutput("BATON_LOCK=/busy BATON_TOKEN=", 10*time.Second)

	marker := filepath.Join(t.TempDir(), "ran")
	_, stderr, code := run(t, e, "lock", "--ttl", "2s", "--timeout", "300ms", "/busy", "--", "touch", marker)
	if code != exitTimeout {
		t.Fatalf("exit %d, want 75; stderr %q", code, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("CMD ran although the lock was not acquired")
	}
	if !strings.Contains(stderr, "not acquired within 300ms") {
		t.Fatalf("stderr %q", stderr)
	}
	// The holder releases on SIGINT and exits 0; then the lock is free.
	holder.signal(syscall.SIGINT)
	if code := holder.wait(10 * time.Second); code != 0 {
		t.Fatalf("holder exit %d, stderr %q", code, holder.stderr.String())
	}
	if _, stderr, code := run(t, e, "lock", "--ttl", "2s", "--timeout", "5s", "/busy", "--", "true"); code != 0 {
		t.Fatalf("lock after release: exit %d %q", code, stderr)
	}
}

func TestLockForwardsSignalsToCmd(t *testing.T) {
	t.Parallel()
	e, _ := etcdEnv(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		p := start(t, e, "lock", "sig", "--", "sh", "-c",
			`trap 'echo "got $0"; exit 7' TERM INT; echo ready; while :; do sleep 0.05; done`)
		p.waitOutput("ready", 10*time.Second)
		p.signal(sig)
		if code := p.wait(10 * time.Second); code != 7 {
			t.Fatalf("%v: exit %d, want CMD's 7; stderr %q", sig, code, p.stderr.String())
		}
		if !strings.Contains(p.stdout.String(), "got") {
			t.Fatalf("%v: CMD did not see the signal: %q", sig, p.stdout.String())
		}
	}
	// A CMD that dies of the signal gives 128+n.
	p := start(t, e, "lock", "sig", "--", "sh", "-c", `echo ready; exec sleep 30`)
	p.waitOutput("ready", 10*time.Second)
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit %d, want 143", code)
	}
}

func TestLockSignalWhileWaitingLeavesNothing(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, _ testStore, e []string) { signalWhileWaiting(t, e) })
}

func signalWhileWaiting(t *testing.T, e []string) {
	startHeld(t, e, "lock", "/w")
	waiter := start(t, e, "lock", "/w", "--", "true")
	waitStatus(t, e, "/w", 2)
	waiter.signal(syscall.SIGTERM)
	if code := waiter.wait(10 * time.Second); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("waiter exit %d", code)
	}
	waitStatus(t, e, "/w", 1)
}

// waitStatus waits until `baton status` shows n nodes under name.
func waitStatus(t *testing.T, e []string, name string, n int) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	want := strconv.Itoa(n-min(n, 1)) + " waiting"
	child := strings.TrimPrefix(name, "/") + "/" // NAME/child on etcd, /NAME/child on zk
	for {
		out, stderr, code := run(t, e, "status", name)
		if code != 0 {
			t.Fatalf("status: exit %d %q", code, stderr)
		}
		if strings.Contains(out, want) && strings.Count(out, child) == n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed %d nodes: %q", n, out)
		}
		<-time.After(20 * time.Millisecond) // poll interval
	}
}

func TestLockLostStopsCmdBeforeAnotherAcquires(t *testing.T) {
	t.Parallel()
	eachStoreProxied(t, func(t *testing.T, st testStore, direct, viaProxy []string, cut func()) {
		log := filepath.Join(t.TempDir(), "log")
		// The holder's CMD notes SIGTERM but ignores it, and writes a line
		// every 20 ms: the watchdog must SIGKILL it by the loss deadline.
		holder := start(t, viaProxy, "lock", "--ttl", "2s", "--kill-after", "10s", "/cut", "--", "sh", "-c",
			`trap 'echo term >> "$0"' TERM; echo ready; while :; do echo tick >> "$0"; sleep 0.02; done`, log)
		holder.waitOutput("ready", 10*time.Second)
		other := start(t, direct, "lock", "--ttl", "2s", "/cut", "--", "sh", "-c", `echo acquired >> "$0"`, log)
		if st.sessions {
			waitStatus(t, direct, "/cut", 2)
		}

		cut()
		if code := holder.wait(20 * time.Second); code != exitLost {
			t.Fatalf("holder exit %d, want 76; stderr %q", code, holder.stderr.String())
		}
		// The last line is baton's own (CMD's shell may report its child's
		// death).
		lines := strings.Split(strings.TrimSpace(holder.stderr.String()), "\n")
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, "baton: lock /cut lost while CMD ran") {
			t.Fatalf("holder stderr %q", holder.stderr.String())
		}
		if code := other.wait(20 * time.Second); code != 0 {
			t.Fatalf("other exit %d: %q", code, other.stderr.String())
		}
		checkStoppedBefore(t, log, "acquired")
	})
}

// checkStoppedBefore checks that the log's last line is last: the old
// holder's CMD wrote nothing once the next one ran.
func checkStoppedBefore(t *testing.T, log, last string) {
	t.Helper()
	got, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if lines[len(lines)-1] != last || strings.Count(string(got), last) != 1 {
		t.Fatalf("log %q: the old holder's CMD ran after the next holder's", got)
	}
}

func TestHoldWithoutCmdLost(t *testing.T) {
	t.Parallel()
	px := proxy.Start(t, sharedEtcd(t))
	p := start(t, env("BATON_STORE=etcd://"+px.Addr()), "lock", "--ttl", "2s", "h")
	p.waitOutput("BATON_LOCK=h BATON_TOKEN=", 10*time.Second)
	px.Blackhole()
	if code := p.wait(20 * time.Second); code != exitLost {
		t.Fatalf("exit %d, want 76; stderr %q", code, p.stderr.String())
	}
}
