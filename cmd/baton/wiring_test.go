package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/batonhq/baton/internal/layout"
)

// A wiring is where a command's stdout and stderr go, as users wire them:
// cron's >/dev/null 2>&1, a log file, a pipe, a terminal.
type wiring struct {
	name string
	// open returns the file both go to, and, for what the test reads back,
	// what was written so far.
	open func(t *testing.T) (f *os.File, written func() string)
}

// wirings are the four ways stdout and stderr are wired. Each closes the
// test's own copy at cleanup and waits for the reader of a pipe or a
// terminal, which ends with the last writer.
var wirings = []wiring{
	{"devnull", func(t *testing.T) (*os.File, func() string) {
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f, func() string { return "" }
	}},
	{"file", func(t *testing.T) (*os.File, func() string) {
		path := filepath.Join(t.TempDir(), "out")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f, func() string { b, _ := os.ReadFile(path); return string(b) }
	}},
	{"pipe", func(t *testing.T) (*os.File, func() string) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		return w, drain(t, r, w)
	}},
	{"pty", func(t *testing.T) (*os.File, func() string) {
		ptm, tty, err := pty.Open()
		if err != nil {
			t.Fatal(err)
		}
		return tty, drain(t, ptm, tty)
	}},
}

// drain copies r (a pipe's or a terminal's reading end) into a buffer
// until every writer has closed w; at cleanup it closes the test's copy of
// w, waits for the copy to end (bounded), then closes r.
func drain(t *testing.T, r, w *os.File) func() string {
	var out syncBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A terminal's master reads EIO once the last slave is closed.
		if _, err := io.Copy(&out, r); err != nil && !errors.Is(err, syscall.EIO) && !errors.Is(err, os.ErrClosed) {
			t.Errorf("reading what the commands wrote: %v", err)
		}
	}()
	t.Cleanup(func() {
		w.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("a process still holds the output open 10 s after the test ended")
		}
		r.Close()
		<-done
	})
	return out.String
}

// startWired runs baton with args, stdout and stderr wired to f.
func startWired(t testing.TB, environ []string, f *os.File, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(batonBin, args...)
	cmd.Env = environ
	cmd.Stdout, cmd.Stderr = f, f
	return startCmd(t, cmd)
}

// Of the four wirings, only a terminal is one: /dev/null is a character
// device too, and cron sends a job's output there.
func TestIsTerminalOnlyOnATerminal(t *testing.T) {
	for _, w := range wirings {
		t.Run(w.name, func(t *testing.T) {
			f, _ := w.open(t)
			if got, want := isTerminal(f), w.name == "pty"; got != want {
				t.Errorf("isTerminal(%s) = %v, want %v", w.name, got, want)
			}
		})
	}
}

// A holder and three waiters, two with -v, on every store and however
// their output is wired: their CMDs never overlap and, where tokens fence,
// run in line order.
func TestLockExclusiveHoweverWired(t *testing.T) {
	t.Parallel()
	eachStore(t, false, func(t *testing.T, st testStore, e []string) {
		for i, w := range wirings {
			t.Run(w.name, func(t *testing.T) {
				t.Parallel()
				name := []string{"/wired-devnull", "wired-file", "wired/pipe", "/wired/pty"}[i]
				out, written := w.open(t)
				log := filepath.Join(t.TempDir(), "log")
				holder := startWired(t, e, out, "lock", "--ttl", "5s", name, "--", "sh", "-c",
					`echo "in $BATON_TOKEN" >> "$0"; : > "$0.in"; while [ ! -e "$0.go" ]; do sleep 0.01; done; echo "out $BATON_TOKEN" >> "$0"`, log)
				waitExists(t, log+".in")
				ps := []*proc{holder}
				for _, v := range []string{"-v", "--ttl=5s", "-v"} {
					ps = append(ps, startWired(t, e, out, "lock", v, name, "--", "sh", "-c",
						`echo "in $BATON_TOKEN" >> "$0"; echo "out $BATON_TOKEN" >> "$0"`, log))
				}
				waitReport(t, e, name, "three waiters", func(r statusReport) bool {
					pids := map[int]bool{}
					for _, en := range r.Entries {
						if en.Role == layout.RoleWaiter {
							pids[en.PID] = true
						}
					}
					return len(pids) == 3
				}, ps...)
				if err := os.WriteFile(log+".go", nil, 0o644); err != nil {
					t.Fatal(err)
				}
				for _, p := range ps {
					if code := p.wait(30 * time.Second); code != 0 {
						t.Fatalf("baton %v: exit %d; output %q", p.cmd.Args[1:], code, written())
					}
				}
				checkLineLog(t, log, len(ps), st.tokens)
			})
		}
	})
}
