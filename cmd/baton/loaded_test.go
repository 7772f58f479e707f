package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/stats"
	"github.com/batonhq/baton/internal/store"
)

// The loaded-machine layer: the scenarios where CMD must be stopped in
// time (a partition, baton SIGKILLed, baton SIGSTOPped, an operator
// deleting the holder's node) run with CPU hogs on every core, as on a
// busy build machine. CI runs each once per store; BATON_LOADED_RUNS=20
// (scripts/reliability.sh) runs the series whose margins
// docs/RELIABILITY.md reports. Each run's CMD is a ticker (this test
// binary, tickerMain) that notes when SIGTERM reaches it and keeps writing
// a tick every few milliseconds until it is killed: the slow cleanup of a
// job that flushes on SIGTERM.

// tickerEnv, set to a file, makes the test binary run as the ticker CMD.
const tickerEnv = "CMDTEST_TICKER_FILE"

// tickEvery is the ticker's period: how finely a SIGKILL is timed.
const tickEvery = 5 * time.Millisecond

// tickerMain appends "t <unix ns>" every tickEvery and "T <unix ns>" when
// SIGTERM (or SIGINT, SIGHUP) arrives, and goes on until killed. It stops
// by itself after two minutes, should a test leave it behind.
func tickerMain(path string) int {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	note := func(kind byte) { _, _ = fmt.Fprintf(f, "%c %d\n", kind, time.Now().UnixNano()) }
	note('t')
	tick := time.NewTicker(tickEvery)
	stop := time.After(2 * time.Minute)
	for {
		select {
		case <-sig:
			note('T')
		case <-tick.C:
			note('t')
		case <-stop:
			return 0
		}
	}
}

// ticks is what a ticker wrote.
type ticks struct {
	first, last int64 // unix ns of the first and the last tick
	term        int64 // unix ns of the first SIGTERM, 0 if none came
	raw         []byte
}

func readTicks(t *testing.T, path string) ticks {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tk := ticks{raw: b}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		kind, v, ok := strings.Cut(l, " ")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			continue // a line cut short by the SIGKILL
		}
		switch {
		case kind == "T" && tk.term == 0:
			tk.term = n
		case kind == "t":
			if tk.first == 0 {
				tk.first = n
			}
			tk.last = n
		}
	}
	return tk
}

// loadedRuns is how many times each loaded scenario runs per store: 1, or
// $BATON_LOADED_RUNS.
func loadedRuns(t *testing.T) int { return runsFrom(t, "BATON_LOADED_RUNS") }

// runsFrom is how many times a scenario runs per store: 1, or the number
// (1 to 100) in the environment variable env.
func runsFrom(t *testing.T, env string) int {
	n := 1
	if v := os.Getenv(env); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 100 {
			t.Fatalf("%s=%q: want 1..100", env, v)
		}
	}
	return n
}

// hogCPU runs a CPU hog per core plus one (`yes >/dev/null`) until the
// test ends.
func hogCPU(t *testing.T) {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var hogs []*exec.Cmd
	t.Cleanup(func() {
		for _, h := range hogs {
			_ = h.Process.Kill()
			_ = h.Wait()
		}
		_ = null.Close()
	})
	for range runtime.NumCPU() + 1 {
		h := exec.Command("yes")
		h.Stdout = null
		if err := h.Start(); err != nil {
			t.Fatalf("start a CPU hog: %v", err)
		}
		hogs = append(hogs, h)
	}
}

// loadedTTL is the holder's TTL in the loaded scenarios (so the default
// --grace is 1 s): on a machine this loaded, a 3 s hold went out of
// contact on its own before the fault in 3 runs of 20.
const loadedTTL = 6 * time.Second

// TestLoaded runs the scenarios with CPU hogs on every core. It is not
// parallel: the other tests of the package wait while the hogs run. Its
// scenarios and stores run at once, as load of their own. A single run
// (CI) takes each scenario on two stores, a session store and a Redis one,
// the pairs chosen so that every store is hit; the series take every
// store. (Every store meets every scenario unloaded in CI anyway:
// TestLockLostStopsCmdBeforeAnotherAcquires, TestWatchdogBatonKilled,
// TestWatchdogBatonStopped, TestLockJeopardyGivesUpHold.)
func TestLoaded(t *testing.T) {
	hogCPU(t)
	series := loadedRuns(t) > 1
	for _, sc := range loadedScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			for _, st := range testStores {
				if sc.sessionsOrRedis && st.name == "redlock" || !series && !slices.Contains(sc.ci, st.name) || !runsOn(t, st) {
					continue
				}
				t.Run(st.name, func(t *testing.T) {
					t.Parallel()
					loadedSeries(t, sc, st)
				})
			}
		})
	}
}

// loadedScenario is one fault done to a holder.
type loadedScenario struct {
	name string
	what string // for the margin lines: what the fault is
	// sessionsOrRedis: not on Redlock (an operator's delete there is a
	// delete on every master; one server says the same).
	sessionsOrRedis bool
	// graceful: CMD must have been told with SIGTERM before its SIGKILL.
	// (How long before is measured, not asserted: the watchdog sends it
	// the grace before, TestWatchdogSchedule checks that, but a CMD
	// starved of CPU may note it only later.)
	graceful bool
	// takeover: the next holder waits, and CMD must be dead before it
	// starts.
	takeover bool
	// grandchild: the ticker runs under `sh -c`, as a grandchild of
	// baton, so that only the watchdog can stop it.
	grandchild bool
	args       []string // more flags for the holder
	ci         []string // the stores of a single run
}

var loadedScenarios = []loadedScenario{
	{name: "partition", what: "holder cut off (proxy blackholed)", graceful: true, takeover: true, ci: []string{"zk", "redis", "postgres"}},
	{name: "baton-killed", what: "holder's baton SIGKILLed", takeover: true, grandchild: true, ci: []string{"etcd", "redlock"}},
	{name: "baton-stopped", what: "holder's baton SIGSTOPped", graceful: true, takeover: true, ci: []string{"etcd", "redlock"}},
	{name: "admin-delete", what: "holder's node deleted by an operator", sessionsOrRedis: true, args: []string{"--kill-after", "3s"}, ci: []string{"zk", "redis"}},
}

// loadedRun is what one run measured.
type loadedRun struct {
	termed   bool          // CMD got SIGTERM
	notice   time.Duration // SIGTERM → CMD's last tick (the time CMD had)
	takeover time.Duration // CMD's last tick → the next holder's start
	latency  time.Duration // fault → SIGTERM (admin-delete)
}

// loadedSeries runs sc loadedRuns times on st and logs its margins.
func loadedSeries(t *testing.T, sc loadedScenario, st testStore) {
	direct, viaProxy, pxs := proxied(t, st)
	n := loadedRuns(t)
	var runs []loadedRun
	voids, noTerm := 0, 0
	for i := range n {
		for a := 1; ; a++ {
			for _, px := range pxs {
				px.Heal()
			}
			name := fmt.Sprintf("/loaded-%s-%d-%d", sc.name, i, a)
			r, ok := loadedOnce(t, sc, st, direct, viaProxy, pxs, name)
			if ok {
				runs = append(runs, r)
				if !r.termed {
					noTerm++
				}
				break
			}
			voids++
			if a == 3 {
				t.Fatalf("run %d: in all %d attempts the holder was told to stop before the fault: the machine starves baton", i, a)
			}
		}
	}
	var notice, takeover, latency []time.Duration
	for _, r := range runs {
		if r.termed {
			notice = append(notice, r.notice)
		}
		if sc.takeover {
			takeover = append(takeover, r.takeover)
		}
		if sc.name == "admin-delete" && r.termed {
			latency = append(latency, r.latency)
		}
	}
	t.Logf("loaded %s %s: runs %d, void %d, no SIGTERM %d; SIGTERM→last tick %s; last tick→next holder %s; fault→SIGTERM %s",
		sc.name, st.name, len(runs), voids, noTerm, mmm(notice), mmm(takeover), mmm(latency))
}

// mmm is "min/median/max" to the millisecond, or "-".
func mmm(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	r := func(p float64) string { return stats.Percentile(ds, p).Round(time.Millisecond).String() }
	return r(0) + "/" + r(50) + "/" + r(100)
}

// loadedOnce runs sc once and reports what it measured, and false if the
// run is void: the holder was told to stop (or lost its hold) before the
// fault, as a starved baton may be.
func loadedOnce(t *testing.T, sc loadedScenario, st testStore, direct, viaProxy string, pxs []*proxy.Proxy, name string) (loadedRun, bool) {
	dir := t.TempDir()
	tickFile, started, seen := filepath.Join(dir, "ticks"), filepath.Join(dir, "started"), filepath.Join(dir, "seen")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	holderEnv := env("BATON_STORE="+viaProxy, tickerEnv+"="+tickFile)
	args := append([]string{"lock", "--ttl", loadedTTL.String()}, sc.args...)
	args = append(args, name, "--")
	if sc.grandchild {
		args = append(args, "sh", "-c", `"$0" >/dev/null 2>&1; true`, self)
	} else {
		args = append(args, self)
	}
	holder := start(t, holderEnv, args...)
	if !await.Within(30*time.Second, func() bool {
		b, _ := os.ReadFile(tickFile)
		return len(b) > 0 || exited(holder)
	}) {
		t.Fatalf("the holder's CMD wrote nothing within 30s; stderr %q", holder.stderr.String())
	}
	if exited(holder) {
		if holder.code != exitLost {
			t.Fatalf("holder exit %d before its CMD ran; stderr %q", holder.code, holder.stderr.String())
		}
		return loadedRun{}, false
	}
	var other *proc
	if sc.takeover {
		other = start(t, env("BATON_STORE="+direct), "lock", "--ttl", loadedTTL.String(), name, "--",
			"sh", "-c", `date +%s%N > "$0"; cat "$1" > "$2"`, started, tickFile, seen)
		if !waitHolderAndWaiter(t, direct, name, holder) {
			return loadedRun{}, false
		}
	}
	if tk := readTicks(t, tickFile); tk.term != 0 || exited(holder) {
		return loadedRun{}, false // told to stop before the fault
	}
	fault := time.Now()
	switch sc.name {
	case "partition":
		for _, px := range pxs {
			px.Blackhole()
		}
	case "baton-killed":
		holder.signal(syscall.SIGKILL)
	case "baton-stopped":
		holder.signal(syscall.SIGSTOP)
		t.Cleanup(func() { _ = holder.cmd.Process.Signal(syscall.SIGCONT) })
	case "admin-delete":
		var ok bool
		if fault, ok = deleteHolder(t, direct, name); !ok {
			return loadedRun{}, false // it lost its hold on its own
		}
	}
	var r loadedRun
	if sc.takeover {
		if code := other.wait(60 * time.Second); code != 0 {
			t.Fatalf("next holder exit %d: %q", code, other.stderr.String())
		}
		// The partition heals, so that the old holder's release does
		// not wait out its timeouts.
		for _, px := range pxs {
			px.Heal()
		}
		if sc.name == "baton-stopped" {
			holder.signal(syscall.SIGCONT)
		}
	}
	if sc.name != "baton-killed" {
		if code := holder.wait(60 * time.Second); code != exitLost {
			t.Fatalf("holder exit %d, want 76; stderr %q", code, holder.stderr.String())
		}
	}
	if sc.grandchild {
		// Nothing says when the watchdog killed the grandchild; the
		// next holder's copy of the ticks below shows it was in time.
		await.Until(t, 30*time.Second, "the grandchild to die", func() bool {
			a, _ := os.ReadFile(tickFile)
			<-time.After(3 * tickEvery) // the width of three ticks, to see none come
			b, _ := os.ReadFile(tickFile)
			return len(a) == len(b)
		})
	}
	tk := readTicks(t, tickFile)
	if r.termed = tk.term != 0; r.termed {
		r.notice = time.Duration(tk.last - tk.term)
		r.latency = time.Unix(0, tk.term).Sub(fault)
	}
	if sc.takeover {
		next := readNanos(t, started)
		r.takeover = time.Duration(next - tk.last)
		if tk.last >= next {
			t.Errorf("%s: CMD ticked at %d, %v after the next holder started; holder %q", name, tk.last, time.Duration(tk.last-next), holder.stderr.String())
		}
		if before, err := os.ReadFile(seen); err != nil || string(before) != string(tk.raw) {
			t.Errorf("%s: CMD appended %d bytes after the next holder started (%v)", name, len(tk.raw)-len(before), err)
		}
	}
	switch {
	case sc.graceful && tk.term == 0:
		t.Errorf("%s: CMD got no SIGTERM before its SIGKILL; holder %q", name, holder.stderr.String())
	case sc.name == "admin-delete" && tk.term == 0:
		t.Errorf("%s: CMD got no SIGTERM after its node was deleted; holder %q", name, holder.stderr.String())
	}
	return r, true
}

// deleteHolder deletes the node (or Redis key) of name's holder, as an
// operator would, and returns when it sent the delete, or false if there
// is no holder.
func deleteHolder(t *testing.T, url, name string) (time.Time, bool) {
	t.Helper()
	r := statusOf(t, env("BATON_STORE="+url), name)
	i := slices.IndexFunc(r.Entries, func(e layout.Entry) bool { return e.Role == "holder" })
	if i < 0 {
		return time.Time{}, false
	}
	node := r.Entries[i].Node
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, err := store.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(url, "redis://") { // delete the key: Redis has no node to delete
		c := goredis.NewClient(&goredis.Options{Addr: strings.TrimPrefix(url, "redis://")})
		defer c.Close()
		key, _, _ := strings.Cut(node, "@") // status names a key KEY@server
		at := time.Now()
		n, err := c.Del(ctx, key).Result()
		if err != nil {
			t.Fatalf("DEL %s: %v", key, err)
		}
		return at, n == 1
	}
	s, err := store.Open(ctx, u, store.Options{DialTimeout: 5 * time.Second, TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close(context.Background()) }()
	c := s.Session.Conn()
	var at time.Time
	_, n, err := c.Get(ctx, node)
	if err == nil {
		at = time.Now()
		err = c.Delete(ctx, n)
	}
	if errors.Is(err, baton.ErrNotFound) {
		return at, false
	}
	if err != nil {
		t.Fatalf("delete %s: %v", node, err)
	}
	return at, true
}
