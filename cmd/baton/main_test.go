package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/internal/zktest"
)

// batonBin is the baton binary the tests drive, built once by TestMain
// (with -race when the tests run with -race).
var batonBin string

var raceEnabled bool

func TestMain(m *testing.M) {
	if path := os.Getenv(tickerEnv); path != "" {
		os.Exit(tickerMain(path))
	}
	dir, err := os.MkdirTemp("", "baton-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	batonBin = filepath.Join(dir, "baton")
	args := []string{"build", "-o", batonBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...) // go test puts its own go first on PATH
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build baton:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := zktest.Main(m)
	stopSharedEtcd()
	redistest.StopShared()
	pgtest.StopShared()
	os.RemoveAll(dir)
	if code == 0 {
		// The in-process commands (Main.Run) close every session they open.
		if err := redistest.FindLeaks(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines outlive the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a baton process started by a test.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{}
	code   int
}

// env returns the environment for baton: the test's, without BATON_*
// variables, plus extra.
func env(extra ...string) []string {
	var e []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BATON_") {
			e = append(e, kv)
		}
	}
	return append(e, extra...)
}

// start runs baton with args in the background; the test's cleanup kills
// it (by pid) if it is still running.
func start(t testing.TB, environ []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(batonBin, args...)
	cmd.Env = environ
	return startCmd(t, cmd)
}

// startHeld runs baton with args, a command that prints BATON_TOKEN once
// it holds (lock, semaphore, … without CMD), and waits until it does.
func startHeld(t testing.TB, environ []string, args ...string) *proc {
	t.Helper()
	p := start(t, environ, args...)
	p.waitOutput("BATON_TOKEN=", 10*time.Second)
	return p
}

// startCmd runs cmd (baton, or a command that runs it) as start does.
// Its output is kept in p.stdout and p.stderr, each unless cmd has it
// wired already.
func startCmd(t testing.TB, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{t: t, done: make(chan struct{}), cmd: cmd}
	if p.cmd.Stdout == nil {
		p.cmd.Stdout = &p.stdout
	}
	if p.cmd.Stderr == nil {
		p.cmd.Stderr = &p.stderr
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	go func() {
		err := p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.code = 128 + int(ws.Signal())
			}
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits up to d for the process to exit and returns its status.
func (p *proc) wait(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		p.t.Fatalf("baton %v still running after %v; stdout %q stderr %q", p.cmd.Args[1:], d, p.stdout.String(), p.stderr.String())
		return -1
	}
}

// waitOutput waits up to d until stdout contains s.
func (p *proc) waitOutput(s string, d time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(p.stdout.String(), s) {
		select {
		case <-p.done:
			p.t.Fatalf("baton %v exited (%d) before printing %q; stdout %q stderr %q", p.cmd.Args[1:], p.code, s, p.stdout.String(), p.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("baton %v did not print %q within %v; stdout %q stderr %q", p.cmd.Args[1:], s, d, p.stdout.String(), p.stderr.String())
		}
	}
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal baton: %v", err)
	}
}

// run runs baton to completion (bounded) and returns stdout, stderr and
// the exit status.
func run(t testing.TB, environ []string, args ...string) (string, string, int) {
	t.Helper()
	p := start(t, environ, args...)
	code := p.wait(60 * time.Second)
	return p.stdout.String(), p.stderr.String(), code
}
