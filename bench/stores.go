package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/bench"
	"github.com/batonhq/baton/internal/store"
)

// runStore starts the servers of one store, runs every workload on baton,
// the floors and the peer, and stops the servers.
func runStore(ctx context.Context, p plan, base, st string, emit func(bench.Result)) (notes []string, err error) {
	rg := &rig{st: st}
	defer rg.stop()
	if err := rg.start(ctx, p, base); err != nil {
		return nil, err
	}
	batonT, floorT, err := bench.Targets(rg.url, storeOptions)
	if err != nil {
		return nil, err
	}
	batonT.Store, floorT.Store, rg.peer.Store = st, st, st
	if rg.probe != nil {
		batonT.Probe, floorT.Probe = rg.probe(), rg.probe()
	}
	r := &storeRun{ctx: ctx, p: p, st: st, emit: emit, failed: map[string]bool{}}
	impls := []bench.Target{batonT, rg.peer}
	for _, t := range rg.extraImpls {
		t.Store = st
		impls = append(impls, t)
	}
	if rg.manyOnly {
		// Independent names over the cluster's slots, 4 clients each, in
		// interleaved rounds (baton, redsync, baton, …).
		r.warm(floorT, impls)
		for _, n := range rg.manyLocks {
			r.rounds(impls, func(bench.Target) bench.Config { return bench.Config{Workload: "many", Clients: 4, Locks: n} },
				func(res bench.Result) float64 { return res.AcqPerS }, "acq/s")
		}
		return r.notes, nil
	}
	r.warm(floorT, impls)
	r.rounds(append(append([]bench.Target{floorT}, rg.cycleFloors...), impls...), uncontendedCfg(p), cycleP50, "cycle p50 µs")
	r.sweep(append(append(rg.handOffFloors, impls...), rg.handOffPeers...), impls)
	if rg.herd {
		herders := impls
		if rg.herdBatonOnly {
			herders = impls[:1]
		}
		for _, w := range p.herd {
			r.each(herders, bench.Config{Workload: "herd", Clients: w})
		}
	}
	for _, t := range impls {
		for _, n := range rg.manyLocks {
			r.run(t, bench.Config{Workload: "many", Clients: 4, Locks: n})
		}
	}
	if rg.footprint {
		r.footprints(base, rg)
	}
	return r.notes, nil
}

// storeOptions are those of every baton client: the command line's,
// with a 10 s TTL.
var storeOptions = store.Options{DialTimeout: 10 * time.Second, TTL: 10 * time.Second}

// rig is the servers of one store and what runs on them besides baton:
// the peer library and the floors each workload compares with.
type rig struct {
	st      string
	servers []*server
	rawURL  string
	url     store.URL
	peer    bench.Target
	// cycleFloors join the uncontended rounds after the floor;
	// handOffFloors the contended rounds before baton and the peer, and
	// handOffPeers after them.
	cycleFloors, handOffFloors, handOffPeers []bench.Target
	herd                                     bool  // run the herd workload
	herdBatonOnly                            bool  // not on the peer (its waiters sleep a lease)
	manyLocks                                []int // the many workload's lock counts
	manyOnly                                 bool  // run the many workload alone, in rounds
	footprint                                bool  // measure the footprint of 1,000 waiters
	// extraImpls run as baton and the peer do (baton with other options);
	// probe, if set, makes the probe of baton and the floor (a store
	// whose URL does not name the server the probe reads).
	extraImpls []bench.Target
	probe      func() bench.Probe
}

// start starts the servers of r.st and sets what runs on them.
func (r *rig) start(ctx context.Context, p plan, base string) error {
	r.manyLocks = []int{16}
	var err error
	switch r.st {
	case "zk":
		err = r.startZK(base)
	case "etcd":
		err = r.startEtcd(startEmbeddedEtcd(ctx, base, false))
	case "etcd-nofsync":
		err = r.startEtcd(startEmbeddedEtcd(ctx, base, true))
	case "etcd34":
		err = r.startEtcd(startDebianEtcd(base))
	case "serve3":
		err = r.startServe3(base, p.batonBin)
	case "redis":
		err = r.startRedis(base, 1)
	case "redlock5":
		err = r.startRedis(base, 5)
	case "sentinel":
		err = r.startSentinel(base)
	case "postgres":
		err = r.startPostgres(base, true)
	case "postgres-nofsync":
		err = r.startPostgres(base, false)
	case "redis-cluster":
		err = r.startRedisCluster(base)
	default:
		return fmt.Errorf("unknown store %q", r.st)
	}
	return err
}

// add records a server that started.
func (r *rig) add(s *server, err error) error {
	if err == nil {
		r.servers = append(r.servers, s)
		logf("%s: %s on %s", r.st, s.name, s.addr)
	}
	return err
}

// stop stops every server that started.
func (r *rig) stop() {
	for _, s := range r.servers {
		s.stop()
	}
}

// parse sets the store's URL.
func (r *rig) parse(raw string) error {
	r.rawURL = raw
	u, err := store.Parse(raw)
	r.url = u
	return err
}

// startZK starts one ZooKeeper server; the peer is go-zookeeper's lock.
func (r *rig) startZK(base string) error {
	if err := r.add(startZK(base)); err != nil {
		return err
	}
	hosts := []string{r.servers[0].addr}
	r.peer = bench.Target{Impl: "go-zookeeper", Factory: zkLockFactory{hosts}, Probe: bench.ZKProbe{Hosts: hosts}}
	r.herd, r.footprint = true, true
	return r.parse("zk://" + hosts[0])
}

// startEtcd takes one etcd server started; the peer is etcd's
// concurrency.Mutex.
func (r *rig) startEtcd(s *server, err error) error {
	if err := r.add(s, err); err != nil {
		return err
	}
	r.herd = true
	return r.etcdPeers([]string{s.addr})
}

// startServe3 starts a cluster of three `baton serve`.
func (r *rig) startServe3(base, bin string) error {
	ss, err := startServeCluster(base, bin)
	if err != nil {
		return err
	}
	var hosts []string
	for _, s := range ss {
		_ = r.add(s, nil)
		hosts = append(hosts, s.addr)
	}
	return r.etcdPeers(hosts)
}

// etcdPeers sets what runs on etcd at hosts besides baton: the peer, and
// for the contended rounds two floors and etcd's own server-side lock.
// The relay floor is one write and one watch event per hand-off, the least
// any lock there can cost; the layout floor is concurrency's layout, two
// writes per cycle, with the line kept in process.
func (r *rig) etcdPeers(hosts []string) error {
	var eps []string
	for _, h := range hosts {
		eps = append(eps, "http://"+h)
	}
	if err := r.parse("etcd://" + strings.Join(hosts, ",")); err != nil {
		return err
	}
	r.peer = bench.Target{Impl: "concurrency.Mutex", Factory: etcdMutexFactory{eps}, Probe: bench.EtcdProbe{URLs: eps}}
	r.handOffFloors = []bench.Target{
		{Impl: "relay floor", Store: r.st, Factory: &bench.EtcdRelay{Endpoints: eps}},
		{Impl: "layout floor", Store: r.st, Factory: &bench.EtcdLayoutFloor{Endpoints: eps}},
	}
	// etcd's own lock over its HTTP gateway, as a program in any language
	// takes it (docs/any-language.md).
	if gw, err := bench.GatewayTarget(r.url); err == nil {
		gw.Store = r.st
		r.handOffPeers = []bench.Target{gw}
	}
	return nil
}

// startRedis starts n Redis servers: one is redis://, more a redlock://;
// the peer is redsync.
func (r *rig) startRedis(base string, n int) error {
	var addrs []string
	for i := range n {
		if err := r.add(startRedis(base, i)); err != nil {
			return err
		}
		addrs = append(addrs, r.servers[i].addr)
	}
	raw := "redis://" + addrs[0]
	if n > 1 {
		raw = "redlock://" + strings.Join(addrs, ",")
	}
	if err := r.parse(raw); err != nil {
		return err
	}
	r.peer = bench.Target{Impl: "redsync", Factory: redsyncFactory{addrs}, Probe: &bench.RedisProbe{Addrs: addrs}}
	r.manyLocks = []int{16, 100}
	probe := func() bench.Probe { return &bench.RedisProbe{Addrs: addrs} }
	// The relay floor: one PUBLISH (on each master) per hand-off to the
	// next waiter of a line kept in process, the least any FIFO lock on
	// these servers can cost. The line floor: a fair lock (with tokens on
	// one server) and its line(s) on the server(s), with nothing but the
	// commands that needs.
	relay := bench.Target{Impl: "relay floor", Store: r.st, Factory: &bench.RedisRelay{Addrs: addrs}, Probe: probe()}
	if n > 1 {
		line := bench.Target{Impl: "line floor", Store: r.st, Factory: bench.RedlockLineFloor{Addrs: addrs}, Probe: probe()}
		r.handOffFloors = []bench.Target{relay, line}
		return nil
	}
	// The least a lock with fencing tokens runs: SET NX PX + INCR in one
	// request, then GETDEL in a script.
	r.cycleFloors = []bench.Target{{Impl: "fenced floor", Store: r.st, Factory: bench.RedisFloor{Addrs: addrs, Fenced: true}, Probe: probe()}}
	// The deadline floor: the line floor whose entries carry a deadline
	// the release checks, as issue 14 asks; the blocking floor: waiters
	// blocked in BLPOP, no line of baton's own.
	r.handOffFloors = []bench.Target{relay,
		{Impl: "line floor", Store: r.st, Factory: bench.RedisLineFloor{Addr: addrs[0]}, Probe: probe()},
		{Impl: "deadline floor", Store: r.st, Factory: bench.RedisLineFloor{Addr: addrs[0], Deadlines: true}, Probe: probe()},
		{Impl: "blocking floor", Store: r.st, Factory: bench.RedisBlockingFloor{Addr: addrs[0]}, Probe: probe()},
	}
	return nil
}

// startRedisCluster starts a Redis Cluster of three masters with a
// replica each; the peer is redsync on a go-redis ClusterClient. Only the
// many workload runs there (100 names over the slots, 4 clients each).
func (r *rig) startRedisCluster(base string) error {
	var addrs []string
	for i := range 6 {
		if err := r.add(startRedis(base, i, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000")); err != nil {
			return err
		}
		addrs = append(addrs, r.servers[i].addr)
	}
	if err := joinRedisCluster(addrs, 1); err != nil {
		return err
	}
	if err := r.parse("redis-cluster://" + strings.Join(addrs, ",")); err != nil {
		return err
	}
	r.peer = bench.Target{Impl: "redsync", Factory: redsyncClusterFactory{addrs}}
	r.manyLocks, r.manyOnly = []int{100}, true
	return nil
}

// storeRun runs workloads on one store's targets, emitting the results
// and keeping notes of the failures.
type storeRun struct {
	ctx    context.Context
	p      plan
	st     string
	emit   func(bench.Result)
	notes  []string
	failed map[string]bool // impl → the store cannot be opened by it
}

// one runs cfg on t and returns its result, or false after a failure
// (noted).
func (r *storeRun) one(t bench.Target, cfg bench.Config) (bench.Result, bool) {
	if r.failed[t.Impl] || r.ctx.Err() != nil {
		return bench.Result{}, false
	}
	if cfg.Duration == 0 {
		cfg.Duration = r.p.duration
	}
	res, err := bench.Run(r.ctx, t, cfg)
	if err != nil {
		r.notes = append(r.notes, fmt.Sprintf("%s on %s, %s ×%d: %v", t.Impl, r.st, cfg.Workload, cfg.Clients, err))
		logf("%s on %s, %s: %v", t.Impl, r.st, cfg.Workload, err)
		if strings.Contains(err.Error(), "not available") {
			r.failed[t.Impl] = true // this build cannot open that store: skip the rest
		}
		return res, false
	}
	return res, true
}

// run runs cfg on t and emits the result.
func (r *storeRun) run(t bench.Target, cfg bench.Config) {
	if res, ok := r.one(t, cfg); ok {
		r.emit(res)
	}
}

// each runs cfg on every target.
func (r *storeRun) each(ts []bench.Target, cfg bench.Config) {
	for _, t := range ts {
		r.run(t, cfg)
	}
}

// warm warms the server (a fresh JVM is slow at first) and each client
// path; nothing is emitted.
func (r *storeRun) warm(floor bench.Target, impls []bench.Target) {
	r.one(floor, bench.Config{Workload: "floor", Duration: time.Second})
	for _, t := range impls {
		r.one(t, bench.Config{Workload: "contended", Clients: 4, Duration: time.Second})
	}
}

// rounds runs the figures the targets compare in interleaved rounds
// (floor, baton, peer, floor, …) and emits the median round of each by
// key, so that a slow spell of the machine does not land on one
// implementation only; with several rounds, every run too, for the
// spread of each figure.
func (r *storeRun) rounds(ts []bench.Target, cfg func(bench.Target) bench.Config, key func(bench.Result) float64, what string) {
	got := make([][]bench.Result, len(ts))
	for range max(1, r.p.repeats) {
		for i, t := range ts {
			if res, ok := r.one(t, cfg(t)); ok {
				got[i] = append(got[i], res)
			}
		}
	}
	for _, rs := range got {
		if len(rs) == 0 {
			continue
		}
		if len(rs) > 1 {
			for k, res := range rs {
				res.Repeat = k + 1
				r.emit(res)
			}
		}
		slices.SortFunc(rs, func(a, b bench.Result) int { return cmp.Compare(key(a), key(b)) })
		m := rs[len(rs)/2]
		if len(rs) > 1 {
			var all []string
			for _, res := range rs {
				all = append(all, fmt.Sprintf("%.0f", key(res)))
			}
			m.Note = strings.TrimPrefix(m.Note+fmt.Sprintf("; median of %d interleaved runs (%s %s)", len(rs), what, strings.Join(all, ", ")), "; ")
		}
		r.emit(m)
	}
}

// sweep runs the contended workload at each of the plan's contender
// counts: at 8, in rounds over contenders (the floors, baton, the peers);
// at the others, on impls once each.
func (r *storeRun) sweep(contenders, impls []bench.Target) {
	for _, n := range r.p.sweep {
		if n == 8 {
			r.rounds(contenders, func(bench.Target) bench.Config { return bench.Config{Workload: "contended", Clients: 8} },
				func(res bench.Result) float64 { return res.AcqPerS }, "acq/s")
			continue
		}
		r.each(impls, bench.Config{Workload: "contended", Clients: n, Duration: r.p.sweepDur})
	}
}

// footprints measures 1,000 waiters' memory: with bench/footprint (baton
// and its ZooKeeper backend only), and with the baton command.
func (r *storeRun) footprints(base string, rg *rig) {
	fpBin := filepath.Join(base, "footprint")
	if err := goBuild(fpBin, ".", "./footprint"); err != nil {
		r.notes = append(r.notes, fmt.Sprintf("footprint program: %v", err))
	} else if res, err := footprint(r.ctx, fpBin, "-zk", rg.servers[0].addr, "-waiters", "1000"); err != nil {
		r.notes = append(r.notes, fmt.Sprintf("footprint on %s: %v", r.st, err))
	} else {
		r.emit(res)
	}
	if r.p.batonBin == "" {
		return
	}
	res, err := footprint(r.ctx, r.p.batonBin, "bench", "--store", rg.rawURL, "--workload", "footprint", "--waiters", "1000", "--json")
	if err != nil {
		r.notes = append(r.notes, fmt.Sprintf("footprint (baton command) on %s: %v", r.st, err))
		return
	}
	res.Store, res.Impl = r.st, "baton command"
	r.emit(res)
}

// uncontendedCfg is the uncontended rounds' workload: a floor's for the
// floors, the lock cycle for the rest.
func uncontendedCfg(p plan) func(bench.Target) bench.Config {
	return func(t bench.Target) bench.Config {
		if strings.HasSuffix(t.Impl, "floor") {
			return bench.Config{Workload: "floor", Duration: p.sweepDur}
		}
		return bench.Config{Workload: "uncontended", Duration: p.sweepDur}
	}
}

// cycleP50 is a result's median cycle, in µs (0 if none).
func cycleP50(r bench.Result) float64 {
	if r.CycleP50 == nil {
		return 0
	}
	return *r.CycleP50
}

// footprint runs a footprint measurement (bench/footprint, or `baton bench
// --workload footprint`) in its own process so that its RSS is that of a
// client alone, and reads its one JSON result.
func footprint(ctx context.Context, bin string, args ...string) (bench.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return bench.Result{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(errb.String()))
	}
	var r bench.Result
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r); err != nil {
		return r, err
	}
	return r, nil
}

// buildBaton builds the baton command into bin.
func buildBaton(bin string) error {
	return goBuild(bin, "../cmd/baton", ".") // in its own module, with its own go.mod
}

// goBuild builds pkg in dir into bin.
func goBuild(bin, dir, pkg string) error {
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	return cmd.Run()
}
