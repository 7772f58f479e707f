package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/zktest"
)

// herdWaiters is how many `baton lock` wait behind one holder in the herd
// check: half with -v, half without.
const herdWaiters = 20

// A herdStore is a server of the test's own whose watches can be counted:
// how many it holds now, and how many notifications it has sent so far.
type herdStore struct {
	name  string
	start func(t *testing.T) (env []string, watches, fired func() (int, error), detail func() string)
}

var herdStores = []herdStore{
	{"zk", func(t *testing.T) ([]string, func() (int, error), func() (int, error), func() string) {
		z := zktest.Start(t)
		mntr := func(keys ...string) (int, error) {
			m, err := z.Mntr()
			if err != nil {
				return 0, err
			}
			sum := 0
			for _, k := range keys {
				n, err := strconv.Atoi(m[k])
				if err != nil {
					return 0, fmt.Errorf("mntr %s=%q: %w", k, m[k], err)
				}
				sum += n
			}
			return sum, nil
		}
		watches := func() (int, error) { return mntr("zk_watch_count") }
		// Each event records how many watches it fired.
		fired := func() (int, error) {
			return mntr("zk_sum_node_created_watch_count", "zk_sum_node_deleted_watch_count",
				"zk_sum_node_changed_watch_count", "zk_sum_node_children_watch_count")
		}
		// wchp lists each watched path, then its sessions.
		detail := func() string {
			out, err := z.FourLetter("wchp")
			if err != nil {
				return err.Error()
			}
			paths := 0
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "/") {
					paths++
				}
			}
			return fmt.Sprintf("on %d paths", paths)
		}
		return env("BATON_STORE=zk://" + z.Addr()), watches, fired, detail
	}},
	{"etcd", func(t *testing.T) ([]string, func() (int, error), func() (int, error), func() string) {
		s := etcdtest.Start(t)
		metric := func(name string) (int, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr()+"/metrics", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
					f, err := strconv.ParseFloat(v, 64)
					return int(f), err
				}
			}
			return 0, fmt.Errorf("no %s in etcd's metrics", name)
		}
		watches := func() (int, error) { return metric("etcd_debugging_mvcc_watcher_total") }
		// The events sent, each to one watcher.
		fired := func() (int, error) { return metric("etcd_debugging_mvcc_events_total") }
		detail := func() string {
			n, err := metric("etcd_debugging_mvcc_watch_stream_total")
			if err != nil {
				return err.Error()
			}
			return fmt.Sprintf("on %d streams", n)
		}
		return env("BATON_STORE=etcd://" + s.Addr()), watches, fired, detail
	}},
}

// herdNames spells the name a different way for each wiring.
var herdNames = []string{"herd-devnull", "/herd-file", "herd/pipe", "/herd/pty"}

// One holder and herdWaiters `baton lock` waiters, half of them with -v,
// hold about one watch each on the store (the waiter's predecessor's, and
// the holder's own), and a release notifies about one, however stdout and
// stderr are wired: to /dev/null (where a hand-written terminal check
// once turned the wait display, and its watches on the whole name, on), a
// file, a pipe or a terminal. The waiters also check the lock's promises
// there: their CMDs never overlap, and they run in line order (fencing
// tokens strictly increase).
func TestLockWaitersHerdFreeHoweverWired(t *testing.T) {
	t.Parallel()
	for _, hs := range herdStores {
		t.Run(hs.name, func(t *testing.T) {
			t.Parallel()
			e, watches, fired, detail := hs.start(t)
			// The wirings run one after another: the counts are the
			// server's.
			for i, w := range wirings {
				t.Run(w.name, func(t *testing.T) {
					name := herdNames[i]
					count := func(f func() (int, error)) int {
						t.Helper()
						n, err := f()
						if err != nil {
							t.Fatal(err)
						}
						return n
					}
					out, written := w.open(t)
					log := filepath.Join(t.TempDir(), "log")
					base, fired0 := count(watches), count(fired)

					holder := startHeld(t, e, "lock", "--ttl", "10s", name)
					// The most watches seen from the waiters' start until the
					// release, sampled by a goroutine of its own.
					var (
						mu      sync.Mutex
						most    int
						sampErr error
					)
					stop, sampled := make(chan struct{}), make(chan struct{})
					go func() {
						defer close(sampled)
						for {
							n, err := watches()
							mu.Lock()
							most = max(most, n)
							if err != nil && sampErr == nil {
								sampErr = err
							}
							mu.Unlock()
							select {
							case <-stop:
								return
							case <-time.After(20 * time.Millisecond): // sampling interval
							}
						}
					}()
					mostSeen := func() int { mu.Lock(); defer mu.Unlock(); return most - base }

					var ws []*proc
					for j := range herdWaiters {
						args := []string{"lock", "--ttl", "10s", name, "--", "sh", "-c",
							`echo "in $BATON_TOKEN" >> "$0"; echo "out $BATON_TOKEN" >> "$0"`, log}
						if j%2 == 0 {
							args = append([]string{"lock", "-v"}, args[1:]...)
						}
						ws = append(ws, startWired(t, e, out, args...))
					}
					await.Until(t, 60*time.Second, fmt.Sprintf("%d waiters in line", herdWaiters), func() bool {
						r := statusOf(t, e, name)
						return r.Holders == 1 && r.Waiters == herdWaiters
					})
					// Each waiter watches its predecessor, the holder its own
					// node: want is what a herd-free line holds.
					want := herdWaiters + 1
					await.Until(t, 30*time.Second, "every waiter watching", func() bool { return count(watches)-base >= want })
					// A second's look, so that a display's watches (set as it
					// starts, or as it polls) are seen if there are any.
					await.Within(time.Second, func() bool { return mostSeen() > want })
					steady, where := count(watches)-base, detail()

					holder.signal(syscall.SIGINT)
					for _, p := range append(ws, holder) {
						if code := p.wait(60 * time.Second); code != 0 {
							t.Fatalf("baton %v: exit %d; output %q", p.cmd.Args[1:], code, written())
						}
					}
					close(stop)
					<-sampled
					if sampErr != nil {
						t.Fatalf("counting watches: %v", sampErr)
					}
					releases := herdWaiters + 1
					notes := count(fired) - fired0
					t.Logf("%s, %s: %d watches %s with %d waiters (at most %d), %d notifications in %d releases (%.1f per release)",
						hs.name, w.name, steady, where, herdWaiters, mostSeen(), notes, releases, float64(notes)/float64(releases))
					if m := mostSeen(); m > want {
						t.Errorf("the store held up to %d watches for 1 holder and %d waiters, want %d: a herd", m, herdWaiters, want)
					}
					// A release fires its successor's watch and, where the
					// holder watches its own node, that one too.
					if notes > 2*releases {
						t.Errorf("%d notifications in %d releases, want at most 2 per release: a herd", notes, releases)
					}
					checkLineLog(t, log, herdWaiters, true)
					if w.name != "devnull" && !strings.Contains(written(), "baton: waiting for lock ") {
						t.Errorf("the -v waiters showed no wait: %q", written())
					}
				})
			}
		})
	}
}

// checkLineLog checks the log of n CMDs that each wrote "in TOKEN" then
// "out TOKEN": no two overlapped and, if ordered, they ran in line order
// (tokens strictly increase).
func checkLineLog(t *testing.T, log string, n int, ordered bool) {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2*n {
		t.Fatalf("%d CMDs wrote %d lines, want %d: %q", n, len(lines), 2*n, b)
	}
	last := int64(-1)
	for i := 0; i < len(lines); i += 2 {
		in, okIn := strings.CutPrefix(lines[i], "in ")
		out, okOut := strings.CutPrefix(lines[i+1], "out ")
		if !okIn || !okOut || in != out {
			t.Fatalf("CMDs overlapped at line %d: %q", i+1, b)
		}
		tok, err := strconv.ParseInt(in, 10, 64)
		if err != nil || ordered && tok <= last {
			t.Fatalf("CMDs ran out of line order at line %d (token %q after %d): %q", i+1, in, last, b)
		}
		last = tok
	}
}
