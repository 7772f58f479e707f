package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// holderOf starts `baton lock NAME` (no CMD) and returns it once it holds,
// with the identity baton writes for it.
func holderOf(t *testing.T, e []string, name string) (*proc, string) {
	t.Helper()
	h := start(t, e, "lock", "--ttl", "10s", name)
	h.waitOutput("BATON_TOKEN=", 20*time.Second)
	host, _ := os.Hostname()
	return h, fmt.Sprintf("held by %s pid %d (baton lock %s)", host, h.cmd.Process.Pid, name)
}

// On a terminal, a waiter shows its place in line and the holder (host,
// pid, command, how long held, TTL left), redrawn in place, and clears
// the line once it holds; on every store.
func TestLockShowsWaitOnTerminal(t *testing.T) {
	t.Parallel()
	eachStore(t, false, func(t *testing.T, st testStore, e []string) {
		name := "/show-tty"
		holder, held := holderOf(t, e, name)
		ptm, tty, err := pty.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer ptm.Close()
		var out syncBuffer
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = io.Copy(&out, ptm) }()
		cmd := exec.Command(batonBin, "lock", "--ttl", "10s", name, "--", "echo", "acquired")
		cmd.Env = e
		var stdout bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, tty
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tty.Close()
		want := clearLine + "baton: waiting for lock " + name + ": 2nd in line (1 ahead); " + held + " for "
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(out.String(), want) || !strings.Contains(out.String(), ", TTL ") {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("the terminal never showed %q: %q", want, out.String())
			}
			<-time.After(20 * time.Millisecond) // poll interval
		}
		holder.signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil || stdout.String() != "acquired\n" {
			t.Fatalf("waiter: %v, stdout %q, terminal %q", err, stdout.String(), out.String())
		}
		wg.Wait() // the pty's reads end with the last writer
		if s := out.String(); !strings.HasSuffix(s, clearLine) {
			t.Fatalf("the wait line was not cleared once held: %q", s)
		}
	})
}

// Without a terminal nothing is shown; -v shows each change of the line
// it reads (it polls, so a holder it never sees is not shown), and the
// session's renewals.
func TestLockVerboseShowsWaitAndRenewals(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		name := "/show-v"
		holder, held := holderOf(t, e, name)
		dir := t.TempDir()
		quiet := start(t, e, append([]string{"lock", "--ttl", "3s", name, "--"}, gated(dir, "quiet")...)...)
		waitReport(t, e, name, "the first waiter queued", counts(1, 1))
		loud := start(t, e, "lock", "-v", "--ttl", "3s", name, "--", "true")
		waitStderr(t, loud, "baton: waiting for lock "+name+": 3rd in line (2 ahead); "+held+"\n")
		// A TTL of 3s is renewed about every second.
		waitStderr(t, loud, "baton: lock "+name+": session renewed; lost in ")
		renewals := func() int { return strings.Count(loud.stderr.String(), "session renewed") }
		n := renewals()
		deadline := time.Now().Add(20 * time.Second)
		for renewals() < n+2 {
			if time.Now().After(deadline) {
				t.Fatalf("no renewals shown after the first: %q", loud.stderr.String())
			}
			<-time.After(20 * time.Millisecond) // poll interval
		}
		holder.signal(syscall.SIGINT)
		host, _ := os.Hostname()
		waitStderr(t, loud, fmt.Sprintf("baton: waiting for lock %s: 2nd in line (1 ahead); held by %s pid %d ", name, host, quiet.cmd.Process.Pid))
		if err := os.WriteFile(filepath.Join(dir, "quiet.go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if code := quiet.wait(20 * time.Second); code != 0 || quiet.stderr.String() != "" {
			t.Fatalf("waiter without -v: exit %d, stderr %q, want nothing", code, quiet.stderr.String())
		}
		if code := loud.wait(20 * time.Second); code != 0 {
			t.Fatalf("waiter with -v: exit %d %q", code, loud.stderr.String())
		}
	})
}
