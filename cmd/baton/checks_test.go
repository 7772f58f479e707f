package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/zktest"
)

// TestUsageChecks drives the built binary through the checks made before
// any store is dialled: each is a usage error (exit 2) with one line.
func TestUsageChecks(t *testing.T) {
	t.Parallel()
	dead := "etcd://" + closedPort(t)
	e := env("BATON_STORE=" + dead)
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"lock", "--ttl", "0", "x"}, "--ttl 0s: must be between 1s and 24h0m0s"},
		{[]string{"lock", "--ttl", "-1s", "x"}, "--ttl -1s: must be between"},
		{[]string{"lock", "--ttl", "597h", "x"}, "--ttl 597h0m0s: must be between"},
		{[]string{"lock", "--timeout", "-1s", "x"}, "--timeout -1s: must not be negative"},
		{[]string{"lock", "--kill-after", "-1s", "x"}, "--kill-after -1s: must not be negative"},
		{[]string{"lock", "--grace", "-1s", "x"}, "--grace -1s: must not be negative"},
		{[]string{"lock", "--grace", "5s", "x", "--", "true"}, "--grace 5s: must be under 4.666s with --ttl 10s"},
		{[]string{"lock", "--ttl", "3s", "--grace", "1.4s", "x", "a", "b", "--", "true"}, "--grace 1.4s: must be under 1.4s with --ttl 3s"},
		{[]string{"elect", "--ttl", "2s", "--grace", "2s", "e", "--", "true"}, "elect: --grace 2s: must be under 933ms"},
		{[]string{"elect", "--requeue", "--grace", "8s", "e", "--", "true"}, "elect: --grace 8s: must be under"},
		{[]string{"semaphore", "-n", "2", "--grace", "1h", "s", "--", "true"}, "semaphore: --grace 1h0m0s: must be under"},
		{[]string{"lock", "--dial-timeout", "0", "x"}, "--dial-timeout 0s: must be positive"},
		{[]string{"lock", "--store", "", "x"}, "--store is empty"},
		{[]string{"lock", "--store", "redlock://127.0.0.1:7001,127.0.0.1:7001,127.0.0.1:7002", "x"}, "host 127.0.0.1:7001 listed twice"},
		{[]string{"lock", "x", "sh", "-c", "true"}, "put CMD after --"},
		{[]string{"elect", "--json", "e"}, "--json goes with --observe"},
		{[]string{"elect", "--requeue", "e"}, "--requeue needs a CMD after --"},
		{[]string{"lock", "--on-revoke", "kill", "x"}, `--on-revoke "kill": want ignore or term`},
		{[]string{"lock", "--on-revoke", "term", "--shared", "x"}, "not --shared"},
		{[]string{"revoke", "x", "--", "true"}, "revoke: unexpected CMD"},
		{[]string{"elect", "--requeue", "--timeout", "1s", "e", "--", "true"}, "it takes no --timeout"},
		{[]string{"elect", "--requeue", "--observe", "e", "--", "true"}, "--observe takes no CMD"},
		{[]string{"elect", "--requeue", "--observe", "e"}, "--requeue and --observe exclude each other"},
		// More than a semaphore's record of N holds (a 32-bit int): 2^31
		// was read back as -2^31 and 2^32 as 0, refusing the next client.
		{[]string{"semaphore", "-n", "2147483648", "s"}, "-n 2147483648: invalid number of permits: at most 2147483647"},
		{[]string{"semaphore", "-n", "4294967296", "--permit-ttl", "1m", "s"}, "-n 4294967296: invalid number of permits: at most 2147483647"},
	} {
		_, stderr, code := run(t, e, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.stderr) || strings.Count(stderr, "\n") != 1 || strings.Count(stderr, "baton:") != 1 {
			t.Errorf("baton %q: exit %d stderr %q, want 2 and one line with %q", tc.args, code, stderr, tc.stderr)
		}
	}
}

// TestEmptyBatonStore: $BATON_STORE set and empty is refused (exit 2,
// one line), as an empty --store is, rather than read as the default
// store: a variable never filled in is a mistake. A --store given beside
// it is used.
func TestEmptyBatonStore(t *testing.T) {
	t.Parallel()
	e := env("BATON_STORE=")
	for _, args := range [][]string{
		{"lock", "x", "--", "true"},
		{"status", "x"},
		{"queue", "len", "q"},
	} {
		_, stderr, code := run(t, e, args...)
		if code != exitUsage || !strings.Contains(stderr, "$BATON_STORE is set and empty") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("BATON_STORE= baton %q: exit %d stderr %q, want 2 and one line on the empty $BATON_STORE", args, code, stderr)
		}
	}
	if _, stderr, code := run(t, e, "lock", "--store", "", "x", "--", "true"); code != exitUsage || !strings.Contains(stderr, "--store is empty") {
		t.Errorf("BATON_STORE= baton lock --store '': exit %d stderr %q", code, stderr)
	}
	dead := "etcd://" + closedPort(t)
	if _, stderr, code := run(t, e, "lock", "--store", dead, "--dial-timeout", "100ms", "x", "--", "true"); code != 1 || !strings.Contains(stderr, "cannot reach") {
		t.Errorf("BATON_STORE= baton lock --store %s: exit %d stderr %q, want it dialled", dead, code, stderr)
	}
}

// TestServeBadListen: a --listen (serve's, its --ui-listen, ui's) that is
// not host:port is a usage error, found before anything is made: serve
// leaves no data directory behind.
func TestServeBadListen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--listen", "bogus"}, `baton: serve: --listen "bogus": want host:port`},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--ui", "--ui-listen", "bogus"}, `baton: serve: --ui-listen "bogus": want host:port`},
		{[]string{"ui", "--listen", "bogus"}, `baton: ui: --listen "bogus": want host:port`},
		{[]string{"ui", "--listen", "127.0.0.1:99999"}, `baton: ui: --listen "127.0.0.1:99999": want host:port`},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		args := tc.args
		if args[0] == "serve" {
			args = append(args, "--data-dir", dir)
		}
		_, stderr, code := run(t, env("BATON_STORE=etcd://"+closedPort(t)), args...)
		if code != exitUsage || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("baton %q: exit %d stderr %q, want %d and one line %q…", args, code, stderr, exitUsage, tc.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("baton %q: data directory left behind: %v", args, err)
		}
	}
}

// TestServeAddressTaken: serve on a --listen address another process
// holds exits 1 with one line, and leaves no data directory behind that
// it made itself; one that was there stays.
func TestServeAddressTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fresh := filepath.Join(t.TempDir(), "data")
	_, stderr, code := run(t, env(), "serve", "--listen", ln.Addr().String(), "--data-dir", fresh)
	checkOneLine(t, "serve on a taken address", stderr, code, "address already in use")
	if code != exitFailure {
		t.Errorf("serve on a taken address: exit %d, want %d", code, exitFailure)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("the data directory serve made is left behind: %v", err)
	}
	kept := t.TempDir()
	if _, _, code := run(t, env(), "serve", "--listen", ln.Addr().String(), "--data-dir", kept); code != exitFailure {
		t.Errorf("serve on a taken address with an existing data dir: exit %d, want %d", code, exitFailure)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("an existing data directory was removed: %v", err)
	}
}

// TestCmdCheckedBeforeWaiting: a CMD that does not exist (exit 127) or
// cannot be run (126: a directory, a file without execute permission, as
// the README's table and a shell say), and a nested lock on the NAME CMD
// already holds, are refused before dialling the store (here an
// unreachable one).
func TestCmdCheckedBeforeWaiting(t *testing.T) {
	t.Parallel()
	dead := "BATON_STORE=etcd://" + closedPort(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  string
		code int
	}{{"/nonexistent/cmd", 127}, {"nonexistent-cmd-baton", 127}, {dir, 126}, {plain, 126}} {
		for _, args := range [][]string{{"lock", "x"}, {"semaphore", "-n", "1", "x"}} {
			args = append(args, "--", tc.cmd)
			_, stderr, code := run(t, env(dead), args...)
			if code != tc.code || !strings.Contains(stderr, "cannot run "+tc.cmd) {
				t.Errorf("baton %q: exit %d stderr %q; want %d", args, code, stderr, tc.code)
			}
		}
	}
	_, stderr, code := run(t, env(dead, "BATON_LOCK=x"), "lock", "x", "--", "true")
	if code != exitUsage || !strings.Contains(stderr, "a nested one would wait for itself") {
		t.Fatalf("nested lock: exit %d stderr %q", code, stderr)
	}
}

// TestHelpAndVersion: help and version print on stdout and exit 0.
func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args   []string
		stdout string
	}{
		{[]string{"help"}, "usage: baton COMMAND"},
		{[]string{"--help"}, "usage: baton COMMAND"},
		{[]string{"lock", "-h"}, "usage: baton lock"},
		{[]string{"version"}, "baton "},
		{[]string{"--version"}, "baton "},
	} {
		stdout, stderr, code := run(t, env(), tc.args...)
		if code != 0 || !strings.HasPrefix(stdout, tc.stdout) || stderr != "" {
			t.Errorf("baton %q: exit %d stdout %q stderr %q", tc.args, code, stdout, stderr)
		}
	}
}

// TestSecondSignalKillsCmd: the first SIGTERM goes to CMD (which ignores
// it), the second SIGKILLs CMD's group.
func TestSecondSignalKillsCmd(t *testing.T) {
	t.Parallel()
	e, _ := etcdEnv(t)
	p := start(t, e, "lock", "/twice", "--", "sh", "-c", `trap 'echo got' TERM INT; echo ready; while :; do sleep 0.05; done`)
	p.waitOutput("ready", 10*time.Second)
	p.signal(syscall.SIGTERM)
	p.waitOutput("got", 10*time.Second) // the first reached CMD, which goes on
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit %d, want 137; stderr %q", code, p.stderr.String())
	}
}

// TestGrantedTTLWarning: ZooKeeper caps a session at its
// maxSessionTimeout (60 s on the test server; 20 ticks by default); baton
// says so on stderr and goes on.
func TestGrantedTTLWarning(t *testing.T) {
	t.Parallel()
	e := env("BATON_STORE=zk://" + zktest.Shared(t).Addr())
	_, stderr, code := run(t, e, "lock", "--ttl", "90s", "/ttlw", "--", "true")
	if code != 0 || !strings.Contains(stderr, "baton: warning: the store granted a session TTL of 1m0s, not the 1m30s asked") {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
}

// TestQueueVerbs: flags may come before the verb, `queue -h` and `barrier
// --help` list the verbs on stdout, and an item over the limit read from
// stdin gets a readable error.
func TestQueueVerbs(t *testing.T) {
	t.Parallel()
	_, u := etcdEnv(t)
	for _, args := range [][]string{{"queue", "-h"}, {"barrier", "--help"}} {
		stdout, stderr, code := run(t, env(), args...)
		if code != 0 || !strings.HasPrefix(stdout, "usage: baton "+args[0]+" ") || stderr != "" {
			t.Errorf("baton %q: exit %d stdout %q stderr %q", args, code, stdout, stderr)
		}
	}
	if _, stderr, code := run(t, env(), "queue", "--store", u, "put", "/qv", "a"); code != 0 {
		t.Fatalf("put with --store before the verb: exit %d %q", code, stderr)
	}
	if stdout, stderr, code := run(t, env(), "queue", "--store", u, "len", "/qv"); code != 0 || strings.TrimSpace(stdout) != "1" {
		t.Fatalf("len: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	cmd := exec.Command(batonBin, "queue", "put", "--store", u, "/qv")
	cmd.Env = env()
	cmd.Stdin = strings.NewReader(strings.Repeat("x", 2<<20) + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailure || !strings.Contains(stderr.String(), "over 1 MiB") {
		t.Fatalf("2 MiB line: %v, stderr %q", err, stderr.String())
	}
}

// TestLockTry: --try takes a free lock and exits 75 at once on a held one,
// and --timeout 1ns takes what is free (one lock, several, a semaphore's
// lease) and exits 75 on what is held, on every store.
func TestLockTry(t *testing.T) {
	t.Parallel()
	eachStore(t, false, func(t *testing.T, st testStore, e []string) {
		// A plain lock first: Redlock does not count masters started within
		// the last TTL, and Lock waits for them where TryLock would not.
		if _, stderr, code := run(t, e, "lock", "/try", "--", "true"); code != 0 {
			t.Fatalf("lock: exit %d %q", code, stderr)
		}
		if _, stderr, code := run(t, e, "lock", "--try", "/try", "--", "true"); code != 0 {
			t.Fatalf("free lock: exit %d %q", code, stderr)
		}
		// --timeout bounds the wait behind a holder: a free lock is taken
		// even with 1ns.
		for _, args := range [][]string{{"lock", "/try"}, {"lock", "/try", "/try-b"}, {"semaphore", "-n", "1", "/try-sem"}} {
			if args[0] == "semaphore" && !st.sessions {
				continue
			}
			args = append([]string{args[0], "--timeout", "1ns"}, args[1:]...)
			if _, stderr, code := run(t, e, append(args, "--", "true")...); code != 0 {
				t.Fatalf("%q on what is free: exit %d %q", args, code, stderr)
			}
		}
		holder := start(t, e, "lock", "/try")
		holder.waitOutput("BATON_LOCK=/try", 10*time.Second)
		if _, stderr, code := run(t, e, "lock", "--timeout", "1ns", "/try", "--", "true"); code != exitTimeout || !strings.Contains(stderr, "lock /try: not acquired within 1ns") {
			t.Fatalf("--timeout 1ns on a held lock: exit %d stderr %q", code, stderr)
		}
		if _, stderr, code := run(t, e, "lock", "--timeout", "1ns", "/try", "/try-b", "--", "true"); code != exitTimeout || !strings.Contains(stderr, "not acquired within 1ns") {
			t.Fatalf("--timeout 1ns on a held lock and a free one: exit %d stderr %q", code, stderr)
		}
		began := time.Now()
		_, stderr, code := run(t, e, "lock", "--try", "/try", "--", "true")
		if code != exitTimeout || !strings.Contains(stderr, "lock /try: not free (--try): already held by another") {
			t.Fatalf("held lock: exit %d stderr %q", code, stderr)
		}
		if took := time.Since(began); took > 5*time.Second {
			t.Fatalf("--try on a held lock took %v", took)
		}
		holder.signal(syscall.SIGTERM)
		if code := holder.wait(10 * time.Second); code != 0 {
			t.Fatalf("holder exit %d", code)
		}
	})
}

// TestQueueTakeRaw: --raw prints an item's bytes as they are, -0 ends it
// with a NUL, so values with newlines survive.
func TestQueueTakeRaw(t *testing.T) {
	t.Parallel()
	e, _ := etcdEnv(t)
	for _, tc := range []struct{ flag, want string }{{"--raw", "a\nb"}, {"-0", "a\nb\x00"}, {"", "a\nb\n"}} {
		if _, stderr, code := run(t, e, "queue", "put", "/qraw", "a\nb"); code != 0 {
			t.Fatalf("put: exit %d %q", code, stderr)
		}
		args := []string{"queue", "take", "/qraw"}
		if tc.flag != "" {
			args = append(args, tc.flag)
		}
		stdout, stderr, code := run(t, e, args...)
		if code != 0 || stdout != tc.want {
			t.Fatalf("take %s: exit %d stdout %q stderr %q, want %q", tc.flag, code, stdout, stderr, tc.want)
		}
	}
}

// TestCompletion: the bash script completes commands, verbs and flags in a
// real bash; zsh's is the same function under bashcompinit; fish's names
// the commands and verbs.
func TestCompletion(t *testing.T) {
	t.Parallel()
	script := `source <("$0" completion bash)
COMP_WORDS=(baton qu); COMP_CWORD=1; _baton; echo "${COMPREPLY[*]}"
COMP_WORDS=(baton queue t); COMP_CWORD=2; _baton; echo "${COMPREPLY[*]}"
COMP_WORDS=(baton lock --tr); COMP_CWORD=2; _baton; echo "${COMPREPLY[*]}"`
	out, err := exec.Command("bash", "-c", script, batonBin).CombinedOutput()
	if err != nil || string(out) != "queue\ntake\n--try\n" {
		t.Fatalf("bash completion: %v, output %q", err, out)
	}
	for shell, want := range map[string]string{"zsh": "bashcompinit", "fish": "__fish_seen_subcommand_from queue' -f -a \"put take len\""} {
		stdout, stderr, code := run(t, env(), "completion", shell)
		if code != 0 || !strings.Contains(stdout, want) || !strings.Contains(stdout, "lock") {
			t.Errorf("%s: exit %d stdout %q stderr %q", shell, code, stdout, stderr)
		}
	}
	if _, stderr, code := run(t, env(), "completion", "tcsh"); code != exitUsage || !strings.Contains(stderr, `unknown shell "tcsh"`) {
		t.Errorf("tcsh: exit %d stderr %q", code, stderr)
	}
}
