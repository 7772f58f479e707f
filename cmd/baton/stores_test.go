package main

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/redistest"
	"github.com/batonhq/baton/internal/zktest"
)

// testStore is one kind of real server the CLI tests run against.
type testStore struct {
	name string
	// start runs the servers for t and returns their host:port.
	start func(t *testing.T) []string
	// scheme makes the --store URL: scheme://host:port,…
	scheme string
	// sessions: the store has sessions (every recipe), not only locks.
	sessions bool
	// tokens: locks carry fencing tokens (Redlock's are 0).
	tokens bool
}

func (st testStore) url(addrs []string) string {
	if st.scheme == "postgres" { // a user and database of the test server's own
		return "postgres://postgres@" + strings.Join(addrs, ",") + "/postgres?sslmode=disable"
	}
	return st.scheme + "://" + strings.Join(addrs, ",")
}

var testStores = []testStore{
	{"etcd", func(t *testing.T) []string { return []string{sharedEtcd(t)} }, "etcd", true, true},
	{"zk", func(t *testing.T) []string { return []string{zktest.Shared(t).Addr()} }, "zk", true, true},
	{"redis", func(t *testing.T) []string { return sharedRedis(t, "redis", 1) }, "redis", false, true},
	{"redlock", func(t *testing.T) []string { return sharedRedis(t, "redlock", 3) }, "redlock", false, false},
	{"postgres", func(t *testing.T) []string { return []string{pgtest.Shared(t).Addr()} }, "postgres", true, true},
}

// postgresTests are the tests among those run on every store (eachStore)
// that run on postgres too: the command line's contract (lock and its
// environment, exits, signals, loss and jeopardy, names, status, and each
// recipe's command), within the CI time a new store may add. The others
// run the same code on the stores with sessions. (TestCmdEnvWithoutSecrets
// does not apply: a postgres:// user without a password is a whole URL,
// for a server that trusts it or a ~/.pgpass, not a password taken out.)
var postgresTests = map[string]bool{
	"TestLockExclusiveHoweverWired": true, "TestLockRunsCmdWithEnv": true,
	"TestLockShowsWaitOnTerminal": true, "TestStatusWatch": true, "TestLockSignalWhileWaitingLeavesNothing": true,
	"TestLockTimeoutDoesNotRunCmd": true, "TestElect": true, "TestWatchdogBatonStopped": true, "TestSemaphore": true,
	"TestNameForms": true, "TestLockLostStopsCmdBeforeAnotherAcquires": true, "TestBarrier": true, "TestLockTry": true,
	"TestQueue": true, "TestStatusPriorityDelayQueue": true,
}

// runsOn says whether the test t runs on st (postgresTests).
func runsOn(t *testing.T, st testStore) bool {
	return st.name != "postgres" || postgresTests[t.Name()]
}

// sharedRedis returns the addresses of n Redis servers for the whole test
// binary (redistest.Shared's pool), once they have been up for the
// default TTL: the restart guard holds back every lock of a TTL on a
// server up for less (a fresh one could be one restarted empty), which
// the tests of the guard try on servers of their own. Tests sharing them
// use names of their own, as on the shared etcd and ZooKeeper.
func sharedRedis(t *testing.T, pool string, n int) []string {
	t.Helper()
	var addrs []string
	for _, s := range redistest.Shared(t, pool, n) {
		s.WaitUp(baton.DefaultTTL)
		addrs = append(addrs, s.Addr())
	}
	return addrs
}

var etcdShared struct {
	once sync.Once
	srv  *etcdtest.Server
	dir  string
	err  error
}

// sharedEtcd returns the address of one embedded etcd for the whole test
// binary (stopped by TestMain); tests sharing it use names of their own,
// as they do on the shared ZooKeeper. It runs in a process of its own
// (internal/etcdtest), so that a -race test binary does not run the
// server under the race detector too: in-process, a page of TestUIPaginates
// (20,000 keys listed) outlasted the ui's 8 s bound on a loaded machine.
func sharedEtcd(t *testing.T) string {
	t.Helper()
	etcdShared.once.Do(func() {
		etcdShared.dir, etcdShared.err = os.MkdirTemp("", "baton-cli-etcd-")
		if etcdShared.err != nil {
			return
		}
		etcdShared.srv, etcdShared.err = etcdtest.New(etcdShared.dir)
	})
	if etcdShared.err != nil {
		t.Fatalf("embedded etcd: %v", etcdShared.err)
	}
	return etcdShared.srv.Addr()
}

// stopSharedEtcd stops the shared server, if it was started.
func stopSharedEtcd() {
	if etcdShared.srv != nil {
		etcdShared.srv.Stop()
	}
	if etcdShared.dir != "" {
		_ = os.RemoveAll(etcdShared.dir)
	}
}

// eachStore runs f against every store kind as a subtest, with baton's
// environment pointing at a server of that kind.
func eachStore(t *testing.T, sessionsOnly bool, f func(t *testing.T, st testStore, e []string)) {
	for _, st := range testStores {
		if sessionsOnly && !st.sessions || !runsOn(t, st) {
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			addrs := st.start(t)
			f(t, st, env("BATON_STORE="+st.url(addrs)))
		})
	}
}

// eachStoreProxied is eachStore with a fault proxy in front of each
// server: f gets the direct and the proxied environments, and cut, which
// cuts every proxy.
func eachStoreProxied(t *testing.T, f func(t *testing.T, st testStore, direct, viaProxy []string, cut func())) {
	for _, st := range testStores {
		if !runsOn(t, st) {
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			addrs := st.start(t)
			var pxs []*proxy.Proxy
			var paddrs []string
			for _, a := range addrs {
				px := proxy.Start(t, a)
				pxs = append(pxs, px)
				paddrs = append(paddrs, px.Addr())
			}
			cut := func() {
				for _, px := range pxs {
					px.Cut()
				}
			}
			f(t, st, env("BATON_STORE="+st.url(addrs)), env("BATON_STORE="+st.url(paddrs)), cut)
		})
	}
}
