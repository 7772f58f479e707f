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
// the floor and the peer, and stops the servers.
func runStore(ctx context.Context, p plan, base, st string, emit func(bench.Result)) (notes []string, err error) {
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	start := func(s *server, err error) error {
		if err == nil {
			servers = append(servers, s)
			logf("%s: %s on %s", st, s.name, s.addr)
		}
		return err
	}
	var rawURL string
	var peer bench.Target
	switch st {
	case "zk":
		if err := start(startZK(base)); err != nil {
			return nil, err
		}
		hosts := []string{servers[0].addr}
		rawURL = "zk://" + hosts[0]
		peer = bench.Target{Impl: "go-zookeeper", Factory: zkLockFactory{hosts}, Probe: bench.ZKProbe{Hosts: hosts}}
	case "etcd", "etcd34", "etcd-nofsync":
		switch st {
		case "etcd":
			err = start(startEmbeddedEtcd(ctx, base, false))
		case "etcd-nofsync":
			err = start(startEmbeddedEtcd(ctx, base, true))
		default:
			err = start(startDebianEtcd(base))
		}
		if err != nil {
			return nil, err
		}
		eps := []string{"http://" + servers[0].addr}
		rawURL = "etcd://" + servers[0].addr
		peer = bench.Target{Impl: "concurrency.Mutex", Factory: etcdMutexFactory{eps}, Probe: bench.EtcdProbe{URLs: eps}}
	case "serve3":
		ss, err := startServeCluster(base, p.batonBin)
		if err != nil {
			return nil, err
		}
		servers = append(servers, ss...)
		var eps, hosts []string
		for _, s := range ss {
			logf("%s: %s on %s", st, s.name, s.addr)
			eps, hosts = append(eps, "http://"+s.addr), append(hosts, s.addr)
		}
		rawURL = "etcd://" + strings.Join(hosts, ",")
		peer = bench.Target{Impl: "concurrency.Mutex", Factory: etcdMutexFactory{eps}, Probe: bench.EtcdProbe{URLs: eps}}
	case "redis", "redlock5":
		n := 1
		if st == "redlock5" {
			n = 5
		}
		var addrs []string
		for i := range n {
			if err := start(startRedis(base, i)); err != nil {
				return nil, err
			}
			addrs = append(addrs, servers[i].addr)
		}
		rawURL = "redis://" + addrs[0]
		if n > 1 {
			rawURL = "redlock://" + strings.Join(addrs, ",")
		}
		peer = bench.Target{Impl: "redsync", Factory: redsyncFactory{addrs}, Probe: &bench.RedisProbe{Addrs: addrs}}
	default:
		return nil, fmt.Errorf("unknown store %q", st)
	}
	u, err := store.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	batonT, floorT, err := bench.Targets(u, store.Options{DialTimeout: 10 * time.Second, TTL: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	batonT.Store, floorT.Store, peer.Store = st, st, st

	failed := map[string]bool{} // impl → the store cannot be opened by it
	one := func(t bench.Target, cfg bench.Config) (bench.Result, bool) {
		if failed[t.Impl] || ctx.Err() != nil {
			return bench.Result{}, false
		}
		if cfg.Duration == 0 {
			cfg.Duration = p.duration
		}
		r, err := bench.Run(ctx, t, cfg)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s on %s, %s ×%d: %v", t.Impl, st, cfg.Workload, cfg.Clients, err))
			logf("%s on %s, %s: %v", t.Impl, st, cfg.Workload, err)
			if strings.Contains(err.Error(), "not available") {
				failed[t.Impl] = true // this build cannot open that store: skip the rest
			}
			return r, false
		}
		return r, true
	}
	run := func(t bench.Target, cfg bench.Config) {
		if r, ok := one(t, cfg); ok {
			emit(r)
		}
	}
	impls := []bench.Target{batonT, peer}

	// Warm the server (a fresh JVM is slow at first) and each client path.
	one(floorT, bench.Config{Workload: "floor", Duration: time.Second})
	for _, t := range impls {
		one(t, bench.Config{Workload: "contended", Clients: 4, Duration: time.Second})
	}
	// The figures the targets compare run in interleaved rounds (floor,
	// baton, peer, floor, …) and the median round is reported, so that a
	// slow spell of the machine does not land on one implementation only.
	rounds := func(ts []bench.Target, cfg func(bench.Target) bench.Config, key func(bench.Result) float64, what string) {
		got := make([][]bench.Result, len(ts))
		for range max(1, p.repeats) {
			for i, t := range ts {
				if r, ok := one(t, cfg(t)); ok {
					got[i] = append(got[i], r)
				}
			}
		}
		for _, rs := range got {
			if len(rs) == 0 {
				continue
			}
			if len(rs) > 1 {
				// Every run too, for the spread of each figure.
				for k, r := range rs {
					r.Repeat = k + 1
					emit(r)
				}
			}
			slices.SortFunc(rs, func(a, b bench.Result) int { return cmp.Compare(key(a), key(b)) })
			m := rs[len(rs)/2]
			if len(rs) > 1 {
				var all []string
				for _, r := range rs {
					all = append(all, fmt.Sprintf("%.0f", key(r)))
				}
				m.Note = strings.TrimPrefix(m.Note+fmt.Sprintf("; median of %d interleaved runs (%s %s)", len(rs), what, strings.Join(all, ", ")), "; ")
			}
			emit(m)
		}
	}
	cycleP50 := func(r bench.Result) float64 {
		if r.CycleP50 == nil {
			return 0
		}
		return *r.CycleP50
	}
	uncontended := append([]bench.Target{floorT}, impls...)
	if st == "redis" {
		// The least a lock with fencing tokens runs: SET NX PX + INCR in one
		// request, then GETDEL in a script.
		fenced := bench.Target{Impl: "fenced floor", Store: st, Factory: bench.RedisFloor{Addrs: u.Hosts, Fenced: true}, Probe: &bench.RedisProbe{Addrs: u.Hosts}}
		uncontended = append([]bench.Target{floorT, fenced}, impls...)
	}
	rounds(uncontended, func(t bench.Target) bench.Config {
		if strings.HasSuffix(t.Impl, "floor") {
			return bench.Config{Workload: "floor", Duration: p.sweepDur}
		}
		return bench.Config{Workload: "uncontended", Duration: p.sweepDur}
	}, cycleP50, "cycle p50 µs")
	// On etcd the contended rounds also run two floors: the relay (one
	// write and one watch event per hand-off, the least any lock there can
	// cost) and the layout floor (concurrency's layout, two writes per
	// cycle, with the line kept in process).
	contenders := impls
	if u.Scheme == store.Etcd {
		var urls []string
		for _, h := range u.Hosts {
			urls = append(urls, "http://"+h)
		}
		relay := bench.Target{Impl: "relay floor", Store: st, Factory: &bench.EtcdRelay{Endpoints: urls}}
		layout := bench.Target{Impl: "layout floor", Store: st, Factory: &bench.EtcdLayoutFloor{Endpoints: urls}}
		contenders = append([]bench.Target{relay, layout}, impls...)
		// etcd's own server-side lock over its HTTP gateway, as a
		// program in any language takes it (docs/any-language.md).
		if gw, err := bench.GatewayTarget(u); err == nil {
			gw.Store = st
			contenders = append(contenders, gw)
		}
	}
	if u.Scheme == store.Redis || u.Scheme == store.Redlock {
		// The relay floor: one PUBLISH (on each master) per hand-off to
		// the next waiter of a line kept in process, the least any FIFO
		// lock on these servers can cost.
		relay := bench.Target{Impl: "relay floor", Store: st, Factory: &bench.RedisRelay{Addrs: u.Hosts, Password: u.Password},
			Probe: &bench.RedisProbe{Addrs: u.Hosts, Password: u.Password}}
		// The line floor: a fair lock (with tokens on one server) and its
		// line(s) on the server(s), with nothing but the commands that
		// needs.
		var lf bench.Factory = bench.RedisLineFloor{Addr: u.Hosts[0], Password: u.Password}
		if u.Scheme == store.Redlock {
			lf = bench.RedlockLineFloor{Addrs: u.Hosts, Password: u.Password}
		}
		line := bench.Target{Impl: "line floor", Store: st, Factory: lf, Probe: &bench.RedisProbe{Addrs: u.Hosts, Password: u.Password}}
		floors := []bench.Target{relay, line}
		if u.Scheme == store.Redis {
			// The deadline floor: the line floor whose entries carry a
			// deadline the release checks, as issue 14 asks; the blocking
			// floor: waiters blocked in BLPOP, no line of baton's own.
			dl := bench.Target{Impl: "deadline floor", Store: st, Factory: bench.RedisLineFloor{Addr: u.Hosts[0], Password: u.Password, Deadlines: true},
				Probe: &bench.RedisProbe{Addrs: u.Hosts, Password: u.Password}}
			bl := bench.Target{Impl: "blocking floor", Store: st, Factory: bench.RedisBlockingFloor{Addr: u.Hosts[0], Password: u.Password},
				Probe: &bench.RedisProbe{Addrs: u.Hosts, Password: u.Password}}
			floors = append(floors, dl, bl)
		}
		contenders = append(floors, impls...)
	}
	for _, n := range p.sweep {
		if n == 8 {
			rounds(contenders, func(bench.Target) bench.Config { return bench.Config{Workload: "contended", Clients: 8} },
				func(r bench.Result) float64 { return r.AcqPerS }, "acq/s")
			continue
		}
		for _, t := range impls {
			run(t, bench.Config{Workload: "contended", Clients: n, Duration: p.sweepDur})
		}
	}
	if st == "zk" || strings.HasPrefix(st, "etcd") {
		for _, w := range p.herd {
			for _, t := range impls {
				run(t, bench.Config{Workload: "herd", Clients: w})
			}
		}
	}
	for _, t := range impls {
		run(t, bench.Config{Workload: "many", Clients: 4, Locks: 16})
		if u.Scheme == store.Redis || u.Scheme == store.Redlock {
			run(t, bench.Config{Workload: "many", Clients: 4, Locks: 100})
		}
	}
	if st == "zk" {
		fpBin := filepath.Join(base, "footprint")
		if err := goBuild(fpBin, ".", "./footprint"); err != nil {
			notes = append(notes, fmt.Sprintf("footprint program: %v", err))
		} else if r, err := footprint(ctx, fpBin, "-zk", servers[0].addr, "-waiters", "1000"); err != nil {
			notes = append(notes, fmt.Sprintf("footprint on %s: %v", st, err))
		} else {
			emit(r)
		}
		if p.batonBin != "" {
			r, err := footprint(ctx, p.batonBin, "bench", "--store", rawURL, "--workload", "footprint", "--waiters", "1000", "--json")
			if err != nil {
				notes = append(notes, fmt.Sprintf("footprint (baton command) on %s: %v", st, err))
			} else {
				r.Store, r.Impl = st, "baton command"
				emit(r)
			}
		}
	}
	return notes, nil
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
