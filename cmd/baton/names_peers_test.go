package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/internal/testenv"
)

// spellings are a name as users write it: bare (as etcd's docs write
// `etcdctl lock mutex1`), with a leading "/", and nested.
func spellings(base string) []string {
	return []string{base, "/" + base + "-abs", base + "-nested/a/b"}
}

// otherSpelling is name with its leading "/" added or taken off.
func otherSpellingOf(name string) string {
	if s, ok := strings.CutPrefix(name, "/"); ok {
		return s
	}
	return "/" + name
}

// etcdctlPath is Debian's etcdctl (etcd-client); without it the test
// fails under CI and is skipped otherwise.
func etcdctlPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("etcdctl")
	testenv.Require(t, "etcdctl (install etcd-client)", err)
	return p
}

// countOverlaps reads a log of "S id" and "E id" records, one per start
// and end of a critical section, and returns the number of sections and
// how many of them started while another was open.
func countOverlaps(t *testing.T, path string) (sections, overlaps int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	open := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, id, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "S":
			sections++
			if len(open) > 0 {
				overlaps++
			}
			open[id] = true
		case "E":
			delete(open, id)
		}
	}
	return sections, overlaps
}

// TestEtcdctlLockAndBatonLockExclude is the measurement through
// the command line, for NAME written bare (`barslock`, as etcd's docs
// write `etcdctl lock mutex1`), with a leading "/" and nested. First an
// `etcdctl lock NAME` holder keeps `baton lock --try NAME` out (and not
// the other spelling, another lock on etcd); then `etcdctl lock NAME`
// loops and `baton lock NAME` loops run at once, every critical section
// logged, and none may overlap. baton before names were kept as written
// keyed `barslock` as /barslock/<lease>, beside etcdctl's
// barslock/<lease>: 64 overlaps in 72 cycles in the issue.
func TestEtcdctlLockAndBatonLockExclude(t *testing.T) {
	t.Parallel()
	ctl := etcdctlPath(t)
	e, _ := etcdEnv(t)
	addr := sharedEtcd(t)
	ctlCmd := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, ctl, append([]string{"--endpoints=" + addr, "--dial-timeout=10s"}, args...)...)
		cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
		cmd.WaitDelay = 5 * time.Second
		return cmd
	}
	const loops, cycles = 2, 3 // per side
	for _, name := range spellings(fmt.Sprintf("barslock-%d", time.Now().UnixNano())) {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dir := t.TempDir()

			// etcdctl holds until its command reads the FIFO's end.
			held, fifo := filepath.Join(dir, "held"), filepath.Join(dir, "release")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			holder := ctlCmd(ctx, "lock", name, "--", "sh", "-c", "echo held > "+held+"; cat "+fifo+" >/dev/null")
			if err := holder.Start(); err != nil {
				t.Fatal(err)
			}
			hdone := make(chan error, 1)
			go func() { hdone <- holder.Wait() }()
			proctest.WaitFile(t, held, "held", 20*time.Second)
			if _, stderr, code := run(t, e, "lock", "--try", name, "--", "true"); code != exitTimeout {
				t.Errorf("lock --try %s while etcdctl lock %s holds: exit %d, stderr %q; want %d", name, name, code, stderr, exitTimeout)
			}
			other := otherSpellingOf(name)
			if _, stderr, code := run(t, e, "lock", "--try", other, "--", "true"); code != 0 {
				t.Errorf("lock --try %s while etcdctl lock %s holds: exit %d, stderr %q; want 0 (another lock on etcd)", other, name, code, stderr)
			}
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err != nil {
				t.Fatal(err)
			} else {
				_ = f.Close()
			}
			if err := <-hdone; err != nil {
				t.Fatalf("etcdctl lock %s: %v", name, err)
			}

			log := filepath.Join(dir, "log")
			section := func(id string) string {
				// The hold (sleep) keeps each side busy while the other
				// runs, so that two locks that do not exclude each other
				// would overlap.
				return fmt.Sprintf("echo S %s >> %s; sleep 0.3; echo E %s >> %s", id, log, id, log)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 2*loops*cycles)
			for i := range loops {
				wg.Add(2)
				go func() {
					defer wg.Done()
					for j := range cycles {
						if out, err := ctlCmd(ctx, "lock", name, "--", "sh", "-c", section(fmt.Sprintf("ctl%d.%d", i, j))).CombinedOutput(); err != nil {
							errs <- fmt.Errorf("etcdctl lock %s: %v: %s", name, err, out)
							return
						}
					}
				}()
				go func() {
					defer wg.Done()
					for j := range cycles {
						cmd := exec.CommandContext(ctx, batonBin, "lock", name, "--", "sh", "-c", section(fmt.Sprintf("baton%d.%d", i, j)))
						cmd.Env = e
						if out, err := cmd.CombinedOutput(); err != nil {
							errs <- fmt.Errorf("baton lock %s: %v: %s", name, err, out)
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
			sections, overlaps := countOverlaps(t, log)
			t.Logf("%s: %d overlaps in %d critical sections", name, overlaps, sections)
			if sections != 2*loops*cycles || overlaps != 0 {
				t.Errorf("%s: %d overlaps in %d critical sections (want 0 in %d): etcdctl lock and baton lock do not exclude each other", name, overlaps, sections, 2*loops*cycles)
			}
		})
	}
}

// TestEtcdPeersAndBatonShareNames: for each spelling of a name, an
// `etcdctl elect` leader keeps `baton elect` from leading until it
// resigns, and a holder through etcd's HTTP gateway (/v3/lock/lock, as
// curl would take it) keeps `baton lock` out; the other spelling is
// another lock on etcd, which `baton status` points out.
func TestEtcdPeersAndBatonShareNames(t *testing.T) {
	t.Parallel()
	ctl := etcdctlPath(t)
	e, _ := etcdEnv(t)
	addr := sharedEtcd(t)
	for _, name := range spellings(fmt.Sprintf("bars-peers-%d", time.Now().UnixNano())) {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			// etcdctl elect leads; baton's candidate queues behind it.
			elect := exec.Command(ctl, "--endpoints="+addr, "--dial-timeout=10s", "elect", name, "ctl")
			elect.Env = append(os.Environ(), "ETCDCTL_API=3")
			var eout syncBuffer
			elect.Stdout, elect.Stderr = &eout, &eout
			if err := elect.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { _ = elect.Wait(); close(done) }()
			t.Cleanup(func() { _ = elect.Process.Kill(); <-done })
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(eout.String(), "ctl") { // etcdctl prints its key and value once it leads
				if time.Now().After(deadline) {
					t.Fatalf("etcdctl elect %s never led: %q", name, eout.String())
				}
				<-time.After(10 * time.Millisecond) // poll interval
			}
			cand := start(t, e, "elect", name, "--value", "baton", "--", "sh", "-c", "echo led")
			deadline = time.Now().Add(20 * time.Second)
			for {
				select {
				case <-cand.done:
					t.Fatalf("baton elect %s led (exit %d, stdout %q) while etcdctl elect led", name, cand.code, cand.stdout.String())
				default:
				}
				out, _, _ := run(t, e, "status", "--json", name)
				var rep statusReport
				if json.Unmarshal([]byte(out), &rep) == nil && len(rep.Entries) == 2 {
					if rolesOf(rep) != "leader=ctl candidate=baton" {
						t.Fatalf("status %s: %s", name, rolesOf(rep))
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("baton's candidate never queued behind etcdctl's on %s: %s", name, out)
				}
			}
			if err := elect.Process.Signal(syscall.SIGINT); err != nil { // etcdctl resigns
				t.Fatal(err)
			}
			if code := cand.wait(20 * time.Second); code != 0 || cand.stdout.String() != "led\n" {
				t.Fatalf("baton elect after etcdctl resigned: exit %d, stdout %q, stderr %q", code, cand.stdout.String(), cand.stderr.String())
			}

			// A lock held through the HTTP gateway.
			g := &gateway{t: t, base: "http://" + addr, c: http.Client{Timeout: 20 * time.Second}}
			lease := g.post("/v3/lease/grant", map[string]any{"TTL": 30})
			held := g.post("/v3/lock/lock", map[string]any{"name": b64(name), "lease": lease["ID"]})
			if held == nil {
				t.FailNow()
			}
			if _, stderr, code := run(t, e, "lock", "--try", name, "--", "true"); code != exitTimeout {
				t.Errorf("lock --try %s while the gateway holds %s: exit %d, stderr %q; want %d", name, name, code, stderr, exitTimeout)
			}
			// The other spelling is another lock, and status says where
			// this one is held.
			other := otherSpellingOf(name)
			if _, stderr, code := run(t, e, "lock", "--try", other, "--", "true"); code != 0 {
				t.Errorf("lock --try %s while the gateway holds %s: exit %d, stderr %q; want 0 (another lock on etcd)", other, name, code, stderr)
			}
			out, _, _ := run(t, e, "status", other)
			if want := fmt.Sprintf("note: %s (the other spelling of %s) is held", name, other); !strings.Contains(out, want) {
				t.Errorf("status %s while %s is held: %q lacks %q", other, name, out, want)
			}
			g.post("/v3/lock/unlock", map[string]any{"key": held["key"]})
			if _, stderr, code := run(t, e, "lock", "--try", name, "--", "true"); code != 0 {
				t.Errorf("lock --try %s after the gateway's unlock: exit %d, stderr %q", name, code, stderr)
			}
		})
	}
}
