package etcd_test

import (
	"bufio"
	"context"
	"errors"
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

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/testenv"
)

// etcdctl returns the path of Debian's etcdctl (etcd-client). Without it
// the test fails under CI and is skipped otherwise.
func etcdctl(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("etcdctl")
	testenv.Require(t, "etcdctl (install etcd-client)", err)
	return p
}

// ctlCmd prepares `etcdctl <args>` against the test server.
func ctlCmd(t *testing.T, ctx context.Context, args ...string) *exec.Cmd {
	t.Helper()
	all := append([]string{"--endpoints=" + server(t).Addr(), "--dial-timeout=10s"}, args...)
	cmd := exec.CommandContext(ctx, etcdctl(t), all...)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// kindCount counts the direct children of name of kind (all when kind is
// "").
func kindCount(t *testing.T, s *baton.Session, name, kind string) int {
	t.Helper()
	kids, err := s.Conn().Children(testCtx(t), name)
	if err != nil {
		t.Fatalf("children %s: %v", name, err)
	}
	n := 0
	for _, k := range kids {
		if kind == "" || k.Kind == kind {
			n++
		}
	}
	return n
}

// spellings are a name as users write it, each given to baton and to the
// peer alike: bare (as etcd's docs write `etcdctl lock mutex1`), with a
// leading "/", and nested. etcd keys each as written (baton.CleanName).
func spellings(what string) []string {
	base := fmt.Sprintf("interop-%s-%d", what, time.Now().UnixNano())
	return []string{base, "/" + base + "-abs", base + "-nested/a/b"}
}

// subName names a subtest after a spelling.
func subName(name string) string { return strings.ReplaceAll(name, "/", "_") }

// otherSpelling is name with its leading "/" added or taken off: on etcd
// another lock.
func otherSpelling(name string) string {
	if s, ok := strings.CutPrefix(name, "/"); ok {
		return s
	}
	return "/" + name
}

// etcdctl lock waits behind a baton holder, and baton waits behind an
// etcdctl holder: both see each other's key NAME/<lease hex> as a
// contender, for every spelling of NAME; the other spelling is another
// lock, free while NAME is held.
func TestInteropEtcdctlLockHandOff(t *testing.T) {
	s := openT(t, server(t).Endpoints())
	for _, name := range spellings("handoff") {
		t.Run(subName(name), func(t *testing.T) { etcdctlLockHandOff(t, s, name) })
	}
}

func etcdctlLockHandOff(t *testing.T, s *baton.Session, name string) {
	ctx := testCtx(t)
	m := baton.NewMutex(s, name)
	if m.Name() != name {
		t.Fatalf("Name() = %q, want %q as written", m.Name(), name)
	}
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}

	// etcdctl queues behind us; its command runs only after our Unlock.
	// The command then holds the lock until we open and close its FIFO
	// (etcdctl gives its command no stdin).
	dir := t.TempDir()
	marker, fifo := filepath.Join(dir, "ran"), filepath.Join(dir, "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := ctlCmd(t, ctx, "lock", name, "--", "sh", "-c", "echo held > "+marker+"; cat "+fifo+" > /dev/null")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !await.Within(20*time.Second, func() bool { return kindCount(t, s, name, backend.KindLock) == 2 }) {
		t.Fatal("etcdctl never queued (its key not seen as a lock contender)")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("etcdctl ran its command while baton held the lock")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !await.Within(20*time.Second, func() bool { _, err := os.Stat(marker); return err == nil }) {
		t.Fatal("etcdctl never got the lock after baton's Unlock")
	}

	// Now etcdctl holds: TryLock is refused and Lock waits for it. The
	// other spelling is free.
	if _, err := m.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock while etcdctl holds: %v, want ErrLocked", err)
	}
	o := baton.NewMutex(s, otherSpelling(name))
	if _, err := o.TryLock(ctx); err != nil {
		t.Fatalf("TryLock on %q while etcdctl holds %q: %v, want another lock", o.Name(), name, err)
	}
	if err := o.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { _, err := m.Lock(ctx); got <- err }()
	if !await.Within(20*time.Second, func() bool { return kindCount(t, s, name, backend.KindLock) == 2 }) {
		t.Fatal("baton never queued behind etcdctl")
	}
	select {
	case err := <-got:
		t.Fatalf("Lock returned (%v) while etcdctl holds", err)
	default:
	}
	// etcdctl's command ends, etcdctl unlocks.
	if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err != nil {
		t.Fatal(err)
	} else {
		_ = f.Close()
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("baton never got the lock after etcdctl released it")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("etcdctl lock: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// etcdctl lock and baton Mutex contend on one NAME, in every spelling;
// every critical section appends a start and an end record to one file,
// and no two overlap.
func TestInteropEtcdctlLockNoOverlap(t *testing.T) {
	for _, name := range spellings("overlap") {
		t.Run(subName(name), func(t *testing.T) { etcdctlLockNoOverlap(t, name) })
	}
}

func etcdctlLockNoOverlap(t *testing.T, name string) {
	ctx := testCtx(t)
	log := filepath.Join(t.TempDir(), "log")
	const ctlRuns, batonClients, batonCycles = 4, 2, 6
	appendLine := func(line string) error {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = f.WriteString(line + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}

	var wg sync.WaitGroup
	errs := make(chan error, ctlRuns+batonClients)
	for i := range ctlRuns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The hold (sleep) widens the window an overlap would show in.
			script := fmt.Sprintf("echo S ctl%d >> %s; sleep 0.05; echo E ctl%d >> %s", i, log, i, log)
			out, err := ctlCmd(t, ctx, "lock", name, "--", "sh", "-c", script).CombinedOutput()
			if err != nil {
				errs <- fmt.Errorf("etcdctl lock %d: %v: %s", i, err, out)
			}
		}()
	}
	for i := range batonClients {
		s := openT(t, server(t).Endpoints())
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := baton.NewMutex(s, name)
			for j := range batonCycles {
				if _, err := m.Lock(ctx); err != nil {
					errs <- fmt.Errorf("baton %d: %w", i, err)
					return
				}
				id := fmt.Sprintf("baton%d.%d", i, j)
				err := appendLine("S " + id)
				if err == nil {
					// Hold across one round trip to the store.
					_, _, err = s.Conn().Get(ctx, name+"-absent")
					if errors.Is(err, baton.ErrNotFound) {
						err = nil
					}
				}
				if err == nil {
					err = appendLine("E " + id)
				}
				if uerr := m.Unlock(ctx); err == nil {
					err = uerr
				}
				if err != nil {
					errs <- fmt.Errorf("baton %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spans, ctl := checkNoOverlap(t, f)
	if spans != ctlRuns+batonClients*batonCycles || ctl != ctlRuns {
		t.Fatalf("%d critical sections (%d by etcdctl), want %d (%d)", spans, ctl, ctlRuns+batonClients*batonCycles, ctlRuns)
	}
	t.Logf("%d critical sections, %d by etcdctl lock, no overlap", spans, ctl)
}

// checkNoOverlap reads "S id"/"E id" records and fails unless every start is
// followed by its own end before any other record.
func checkNoOverlap(t *testing.T, r io.Reader) (spans, ctl int) {
	t.Helper()
	sc := bufio.NewScanner(r)
	open := ""
	for line := 1; sc.Scan(); line++ {
		kind, id, _ := strings.Cut(sc.Text(), " ")
		switch {
		case kind == "S" && open == "":
			open = id
		case kind == "E" && id == open:
			open = ""
			spans++
			if strings.HasPrefix(id, "ctl") {
				ctl++
			}
		default:
			t.Fatalf("line %d %q: overlaps the open section %q", line, sc.Text(), open)
		}
	}
	if open != "" {
		t.Fatalf("section %q never ended", open)
	}
	return spans, ctl
}

// etcdctl elect and baton Election share one NAME, in every spelling:
// baton sees etcdctl's candidate as the leader with its proposal, waits
// behind it, and leads once etcdctl resigns.
func TestInteropEtcdctlElect(t *testing.T) {
	s := openT(t, server(t).Endpoints())
	for _, name := range spellings("elect") {
		t.Run(subName(name), func(t *testing.T) { etcdctlElect(t, s, name) })
	}
}

func etcdctlElect(t *testing.T, s *baton.Session, name string) {
	ctx := testCtx(t)
	cmd := ctlCmd(t, ctx, "elect", name, "ctl-proposal")
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	e := baton.NewElection(s, name)
	if !await.Within(20*time.Second, func() bool { return kindCount(t, s, name, "") == 1 }) {
		t.Fatal("etcdctl elect never campaigned")
	}
	v, _, err := e.Leader(ctx)
	if err != nil || string(v) != "ctl-proposal" {
		t.Fatalf("Leader: %q, %v; want etcdctl's proposal", v, err)
	}
	if v, _, err := baton.NewElection(s, otherSpelling(name)).Leader(ctx); !errors.Is(err, baton.ErrNoLeader) {
		t.Fatalf("Leader of %q while etcdctl leads %q: %q, %v; want ErrNoLeader (another election)", otherSpelling(name), name, v, err)
	}
	won := make(chan error, 1)
	go func() { won <- e.Campaign(ctx, []byte("baton")) }()
	if !await.Within(20*time.Second, func() bool { return kindCount(t, s, name, "") == 2 }) {
		t.Fatal("baton never queued behind etcdctl")
	}
	select {
	case err := <-won:
		t.Fatalf("Campaign returned (%v) while etcdctl leads", err)
	default:
	}
	// On SIGINT etcdctl elect resigns and closes its session.
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-won:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("baton never led after etcdctl resigned")
	}
	if v, _, err := e.Leader(ctx); err != nil || string(v) != "baton" {
		t.Fatalf("Leader after etcdctl resigned: %q, %v", v, err)
	}
	// `etcdctl elect -l` (observe) sees baton's leader and its value.
	obs := ctlCmd(t, ctx, "elect", "-l", name)
	out, err := obs.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = obs.Process.Kill(); _ = obs.Wait() })
	seen := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "baton" {
				seen <- true
				return
			}
		}
		seen <- false
	}()
	select {
	case ok := <-seen:
		if !ok {
			t.Fatal("etcdctl elect -l ended without showing baton's value")
		}
	case <-ctx.Done():
		t.Fatal("etcdctl elect -l never showed baton's value")
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
