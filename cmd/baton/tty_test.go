package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
)

// TestLockOnTerminal runs baton on a pseudo-terminal (util-linux script):
// CMD, in its own process group, gets the terminal's foreground, so it can
// read it, and baton exits with its status.
func TestLockOnTerminal(t *testing.T) {
	t.Parallel()
	scriptBin, err := exec.LookPath("script")
	testenv.Require(t, "script (util-linux, Debian's bsdutils)", err)
	e, _ := etcdEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inner := batonBin + ` lock /tty -- sh -c 'read a; echo "got $a"; exit 5'; echo "baton-exit=$?"`
	cmd := exec.CommandContext(ctx, scriptBin, "-qec", inner, "/dev/null")
	cmd.Env = e
	cmd.Stdin = strings.NewReader("hello\n")
	out, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("CMD never read the terminal (stopped in the background?): %q", out)
	}
	if !strings.Contains(string(out), "got hello") || !strings.Contains(string(out), "baton-exit=5") {
		t.Fatalf("output %q", out)
	}
}
