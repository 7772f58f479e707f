package main

import (
	"bytes"
	"context"
	"errors"
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
	"golang.org/x/sys/unix"

	"github.com/batonhq/baton/internal/await"
)

// takeInto runs `baton queue take ARGS…` with stdout out and returns its
// exit status and stderr.
func takeInto(t *testing.T, e []string, out *os.File, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, batonBin, append([]string{"queue", "take", "--timeout", "20s"}, args...)...)
	cmd.Env = e
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("take %v still running after a minute; stderr %q", args, stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), stderr.String()
		}
		return ee.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// queueLenOf is `baton queue len ARGS…`'s output, or fails t.
func queueLenOf(t *testing.T, e []string, args ...string) string {
	t.Helper()
	out, stderr, code := run(t, e, append([]string{"queue", "len"}, args...)...)
	if code != 0 {
		t.Fatalf("queue len %v: exit %d %q", args, code, stderr)
	}
	return strings.TrimSpace(out)
}

// `queue take` writes the item before it removes it from the queue: when
// stdout is /dev/full or a pipe whose reader has gone (SIGPIPE), take
// exits 1 saying so and the item is still in the queue, for the next
// take; on the FIFO, priority and delay queues, names spelled x, /x and
// a/b. (It used to delete the item first: /dev/full lost it with exit 1,
// a closed pipe with exit 141, killed by SIGPIPE.) Where the write works
// (a file, /dev/null, a pipe, a terminal) each item is delivered once.
func TestQueueTakeOutputFails(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		for _, k := range []struct {
			name string
			put  []string // flags of put
			flag []string // flags of take and len
		}{
			{"qt", nil, nil},
			{"/qt-pri", []string{"--priority", "3"}, []string{"--priority"}},
			{"a/qt-del", []string{"--delay", "0s"}, []string{"--delay"}},
		} {
			put := func(v string) {
				t.Helper()
				if _, stderr, code := run(t, e, append(append([]string{"queue", "put"}, k.put...), k.name, v)...); code != 0 {
					t.Fatalf("put %s: exit %d %q", k.name, code, stderr)
				}
			}
			lenArgs := append(append([]string{}, k.flag...), k.name)
			takeArgs := lenArgs
			put("kept")
			full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer full.Close()
			code, stderr := takeInto(t, e, full, takeArgs...)
			if n := queueLenOf(t, e, lenArgs...); n != "1" {
				t.Fatalf("len %v after a take into /dev/full (exit %d %q): %s, want 1: the item is lost", lenArgs, code, stderr, n)
			}
			if code != 1 || !strings.Contains(stderr, "no space left on device") || !strings.Contains(stderr, "stays in the queue") {
				t.Fatalf("take %v >/dev/full: exit %d %q, want 1 saying the item stays", takeArgs, code, stderr)
			}
			// A pipe whose reader has gone: `take | (exec 0<&-; sleep 1)`.
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			code, stderr = takeInto(t, e, w, takeArgs...)
			w.Close()
			if n := queueLenOf(t, e, lenArgs...); n != "1" {
				t.Fatalf("len %v after a take into a closed pipe (exit %d %q): %s, want 1: the item is lost", lenArgs, code, stderr, n)
			}
			if code != 1 || !strings.Contains(stderr, "broken pipe") || !strings.Contains(stderr, "stays in the queue") {
				t.Fatalf("take %v into a closed pipe: exit %d %q, want 1 saying the item stays (141: killed by SIGPIPE)", takeArgs, code, stderr)
			}
			// A file gets the item, and the queue loses it.
			file, err := os.Create(filepath.Join(t.TempDir(), "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			if code, stderr := takeInto(t, e, file, takeArgs...); code != 0 {
				t.Fatalf("take %v into a file: exit %d %q", takeArgs, code, stderr)
			}
			if b, _ := os.ReadFile(file.Name()); string(b) != "kept\n" {
				t.Fatalf("the file got %q, want the item", b)
			}
			// /dev/null, a pipe and a terminal: delivered, once.
			for _, v := range []string{"null", "pipe", "tty"} {
				put(v)
			}
			null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer null.Close()
			if code, stderr := takeInto(t, e, null, takeArgs...); code != 0 {
				t.Fatalf("take %v >/dev/null: exit %d %q", takeArgs, code, stderr)
			}
			if got := readFromTake(t, e, os.Pipe, takeArgs); got != "pipe\n" {
				t.Fatalf("take %v into a pipe: %q", takeArgs, got)
			}
			if got := readFromTake(t, e, pty.Open, takeArgs); got != "tty\r\n" {
				t.Fatalf("take %v on a terminal: %q", takeArgs, got)
			}
			if n := queueLenOf(t, e, lenArgs...); n != "0" {
				t.Fatalf("len %v after every item was taken: %s", lenArgs, n)
			}
		}
	})
}

// readFromTake runs take with stdout the writing end of a pair opened
// with open (a pipe, a pty) and returns what the reading end got.
func readFromTake(t *testing.T, e []string, open func() (*os.File, *os.File, error), takeArgs []string) string {
	t.Helper()
	r, w, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = io.Copy(&out, r) }()
	code, stderr := takeInto(t, e, w, takeArgs...)
	w.Close()
	wg.Wait() // the reads end with the last writer (a pty's with EIO)
	if code != 0 {
		t.Fatalf("take %v: exit %d %q", takeArgs, code, stderr)
	}
	return out.String()
}

// A take killed while it writes the item (stdout a pipe nobody reads,
// filled by an item larger than the pipe's buffer) has not removed it: the
// item was only claimed, and goes back to the queue with the dead
// take's session, for the next take (at least once).
func TestQueueTakeKilledMidWrite(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		const name = "/qt-killed"
		item := strings.Repeat("x", 100<<10) // over a pipe's 64 KiB, under an argument's 128 KiB
		if _, stderr, code := run(t, e, "queue", "put", name, item); code != 0 {
			t.Fatalf("put: exit %d %q", code, stderr)
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		cmd := exec.Command(batonBin, "queue", "take", "--ttl", "2s", name)
		cmd.Env = e
		cmd.Stdout = w
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		waitReport(t, e, name, "the item claimed", func(r statusReport) bool { return r.Claimed == 1 })
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		takeWhole(t, e, name, item, "the killed take")
	})
}

// takeWhole takes name's next item into a file and fails t unless it is
// item whole, with its newline: what a take after an interrupted one
// (after) must get.
func takeWhole(t *testing.T, e []string, name, item, after string) {
	t.Helper()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if code, stderr := takeInto(t, e, file, name); code != 0 {
		t.Fatalf("take after %s: exit %d %q", after, code, stderr)
	}
	if b, _ := os.ReadFile(file.Name()); string(b) != item+"\n" {
		t.Fatalf("the take after %s got %d bytes, want the item's %d and a newline", after, len(b), len(item))
	}
}

// A take signalled while it writes the item (stdout a pipe nobody reads,
// full, with the item larger than the pipe's buffer, so the write blocks)
// gives the delivery up at once: it exits 128+15 saying the item stays in
// the queue, having given its claim back, and the next take gets the item
// whole. (It used to catch the signal and do nothing with it, blocked in
// the write until the reader read: `systemctl stop` and Ctrl-C hung.)
func TestQueueTakeSignalMidWrite(t *testing.T) {
	t.Parallel()
	eachStore(t, true, func(t *testing.T, st testStore, e []string) {
		const name = "/qt-signalled"
		item := strings.Repeat("y", 100<<10) // over a pipe's 64 KiB, under an argument's 128 KiB
		if _, stderr, code := run(t, e, "queue", "put", name, item); code != 0 {
			t.Fatalf("put: exit %d %q", code, stderr)
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		size, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			t.Fatal(err)
		}
		if size >= len(item) {
			t.Fatalf("the pipe holds %d bytes: the item's %d would not block its write", size, len(item))
		}
		cmd := exec.Command(batonBin, "queue", "take", name)
		cmd.Env = e
		cmd.Stdout = w
		p := startCmd(t, cmd) // stderr in p.stderr
		w.Close()
		waitReport(t, e, name, "the item claimed", func(r statusReport) bool { return r.Claimed == 1 }, p)
		// The write blocks once the pipe is full.
		await.Until(t, 10*time.Second, "the pipe full, the take's write blocked", func() bool {
			n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ) // FIONREAD: the bytes in the pipe
			return err == nil && n == size
		})
		p.signal(syscall.SIGTERM)
		if code := p.wait(10 * time.Second); code != 128+int(syscall.SIGTERM) {
			t.Fatalf("take signalled mid-write: exit %d %q, want 143", code, p.stderr.String())
		}
		if !strings.Contains(p.stderr.String(), "terminated while delivering the item (the item was not taken: it stays in the queue)") {
			t.Fatalf("take signalled mid-write: stderr %q, want the item given back", p.stderr.String())
		}
		takeWhole(t, e, name, item, "the signalled take")
	})
}
