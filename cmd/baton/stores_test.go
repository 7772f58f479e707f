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
	// tests, if not nil, are the only tests that run on the store (see
	// runsOn); nil: every test.
	tests map[string]bool
	// viaProxy, if not nil, returns the --store URL of a client whose
	// connections to the store all go through the proxies it starts, in
	// front of what the client dials; nil: one proxy in front of each of
	// addrs (see proxied).
	viaProxy func(t *testing.T, addrs []string) (string, []*proxy.Proxy)
}

func (st testStore) url(addrs []string) string {
	switch st.scheme {
	case "postgres": // a user and database of the test server's own
		return "postgres://postgres@" + strings.Join(addrs, ",") + "/postgres?sslmode=disable"
	case "redis-sentinel": // the sentinels, and the master they monitor
		return st.scheme + "://" + strings.Join(addrs, ",") + "/" + redistest.MasterName
	}
	return st.scheme + "://" + strings.Join(addrs, ",")
}

var testStores = []testStore{
	{name: "etcd", start: func(t *testing.T) []string { return []string{sharedEtcd(t)} }, scheme: "etcd", sessions: true, tokens: true},
	{name: "zk", start: func(t *testing.T) []string { return []string{zktest.Shared(t).Addr()} }, scheme: "zk", sessions: true, tokens: true},
	{name: "redis", start: func(t *testing.T) []string { return sharedRedis(t, "redis", 1) }, scheme: "redis", tokens: true},
	{name: "redlock", start: func(t *testing.T) []string { return sharedRedis(t, "redlock", 3) }, scheme: "redlock"},
	{name: "postgres", start: func(t *testing.T) []string { return []string{pgtest.Shared(t).Addr()} }, scheme: "postgres", sessions: true, tokens: true,
		tests: postgresTests},
	{name: "sentinel", start: sharedSentinel, scheme: "redis-sentinel", tokens: true, tests: sentinelTests, viaProxy: sentinelViaProxy},
	{name: "redis-cluster", start: sharedCluster, scheme: "redis-cluster", tokens: true, tests: clusterTests},
}

// postgresTests are the tests among those run on every store (eachStore)
// that run on postgres too: the command line's contract (lock and its
// environment, exits, signals, loss and jeopardy, names, status, and each
// recipe's command), within the CI time a new store may add. The others
// run the same code on the stores with sessions. (TestCmdEnvWithoutSecrets
// does not apply: a postgres:// user without a password is a whole URL,
// for a server that trusts it or a ~/.pgpass, not a password taken out.)
// The last three loop over testStores themselves, and run on postgres
// whole (TestLoaded on its ci stores, or in a series on all).
var postgresTests = map[string]bool{
	"TestLockExclusiveHoweverWired": true, "TestLockRunsCmdWithEnv": true,
	"TestLockShowsWaitOnTerminal": true, "TestStatusWatch": true, "TestLockSignalWhileWaitingLeavesNothing": true,
	"TestLockTimeoutDoesNotRunCmd": true, "TestElect": true, "TestWatchdogBatonStopped": true, "TestSemaphore": true,
	"TestNameForms": true, "TestLockLostStopsCmdBeforeAnotherAcquires": true, "TestBarrier": true, "TestLockTry": true,
	"TestQueue": true, "TestStatusPriorityDelayQueue": true,
	"TestLockJeopardyGivesUpHold": true, "TestElectRequeue": true, "TestLoaded": true,
}

// sentinelTests are the tests that run on Redis Sentinel: the lock's
// contract however its output is wired (exclusion, loss, a stopped baton,
// names, --try, --timeout). The rest of the Redis code is the same as on
// redis://, once the sentinels have named the master; TestLockSentinel
// and the redis package's tests take the Sentinel's own paths (failover,
// --replicas, TLS, unknown master).
var sentinelTests = map[string]bool{
	"TestLockExclusiveHoweverWired": true, "TestLockLostStopsCmdBeforeAnotherAcquires": true,
	"TestWatchdogBatonStopped": true, "TestNameForms": true, "TestLockTry": true, "TestLockTimeoutDoesNotRunCmd": true,
}

// clusterTests are sentinelTests but the holder cut off
// (TestLockLostStopsCmdBeforeAnotherAcquires): a Cluster client dials the
// addresses the nodes announce (CLUSTER SLOTS, MOVED), one per node for
// every client, so a proxy in front of the seed addresses is not on its
// way, and a node announcing a proxy (cluster-announce-port) puts every
// client behind it, the one that should take the lock over too.
var clusterTests = map[string]bool{
	"TestLockExclusiveHoweverWired": true, "TestWatchdogBatonStopped": true, "TestNameForms": true,
	"TestLockTry": true, "TestLockTimeoutDoesNotRunCmd": true,
}

// runsOn says whether the test t (or the test it is a subtest of) runs
// on st (st.tests).
func runsOn(t *testing.T, st testStore) bool {
	name, _, _ := strings.Cut(t.Name(), "/")
	return st.tests == nil || st.tests[name]
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

// sharedSentinel returns the addresses of the sentinels of one Sentinel
// topology for the whole test binary (redistest.SharedSentinel), once its
// servers have been up for the default TTL (see sharedRedis).
func sharedSentinel(t *testing.T) []string {
	t.Helper()
	tp := redistest.SharedSentinel(t)
	for _, s := range tp.Servers {
		s.WaitUp(baton.DefaultTTL)
	}
	var addrs []string
	for _, s := range tp.Sentinels {
		addrs = append(addrs, s.Addr())
	}
	return addrs
}

// sentinelViaProxy puts a proxy in front of the shared Sentinel
// topology's master, and returns the URL of a sentinel of the test's own
// that names the proxy as the master (redistest.Topology.SentinelVia): a
// client of that URL reaches the master only through the proxy, as a
// client of the topology's sentinels does directly.
func sentinelViaProxy(t *testing.T, _ []string) (string, []*proxy.Proxy) {
	tp := redistest.SharedSentinel(t)
	master := tp.MasterAddr()
	if master == "" {
		t.Fatal("no sentinel names the shared topology's master")
	}
	px := proxy.Start(t, master)
	return tp.SentinelVia(t, px.Addr()), []*proxy.Proxy{px}
}

// sharedCluster returns the addresses of the nodes of one Redis Cluster
// for the whole test binary (redistest.SharedCluster), once they have
// been up for the default TTL (see sharedRedis).
func sharedCluster(t *testing.T) []string {
	t.Helper()
	var addrs []string
	for _, s := range redistest.SharedCluster(t).Nodes {
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
// server (proxied): f gets the direct and the proxied environments, and
// cut, which cuts every proxy.
func eachStoreProxied(t *testing.T, f func(t *testing.T, st testStore, direct, viaProxy []string, cut func())) {
	for _, st := range testStores {
		if !runsOn(t, st) {
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			direct, viaProxy, pxs := proxied(t, st)
			cut := func() {
				for _, px := range pxs {
					px.Cut()
				}
			}
			f(t, st, env("BATON_STORE="+direct), env("BATON_STORE="+viaProxy), cut)
		})
	}
}

// proxied starts st's servers and returns their URL, the URL of a client
// whose every connection to them goes through a proxy, and the proxies:
// one in front of each server, or st.viaProxy's.
func proxied(t *testing.T, st testStore) (direct, viaProxy string, pxs []*proxy.Proxy) {
	addrs := st.start(t)
	if st.viaProxy != nil {
		viaProxy, pxs = st.viaProxy(t, addrs)
		return st.url(addrs), viaProxy, pxs
	}
	var paddrs []string
	for _, a := range addrs {
		px := proxy.Start(t, a)
		pxs = append(pxs, px)
		paddrs = append(paddrs, px.Addr())
	}
	return st.url(addrs), st.url(paddrs), pxs
}
