package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/bench"
)

// machine describes where the run happened.
type machine struct {
	Date       string        `json:"date"`
	Nproc      string        `json:"nproc"`
	Free       string        `json:"free"`
	GoVersion  string        `json:"go_version"`
	Kernel     string        `json:"kernel"`
	CPU        string        `json:"cpu"`
	LoadBefore string        `json:"load_before"`
	LoadAfter  string        `json:"load_after"`
	Elapsed    time.Duration `json:"elapsed"`
}

func sh(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

func describeMachine() machine {
	m := machine{
		Date:       time.Now().UTC().Format("2006-01-02 15:04 MST"),
		Nproc:      sh("nproc"),
		Free:       sh("free", "-m"),
		GoVersion:  runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		Kernel:     sh("uname", "-sr"),
		LoadBefore: sh("cat", "/proc/loadavg"),
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return m
}

// find returns the first result matching impl, store, workload and clients
// (clients 0 matches any).
func find(rs []bench.Result, impl, st, workload string, clients int) *bench.Result {
	for i := range rs {
		r := &rs[i]
		if r.Impl == impl && r.Store == st && r.Workload == workload && (clients == 0 || r.Clients == clients) && r.Repeat == 0 && (workload != "many" || r.Locks == 16) {
			return r
		}
	}
	return nil
}

// check is one target line.
type check struct {
	store, target, measured, verdict string
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func val(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// checks evaluates the targets of issue 7 (8 contenders, same run).
func checks(rs []bench.Result) []check {
	var cs []check
	add := func(st, target string, ok, known bool, measured string) {
		v := "met"
		switch {
		case !known:
			v = "not measured"
		case !ok:
			v = "**missed**"
		}
		cs = append(cs, check{st, target, measured, v})
	}
	missing := func(st, target string) { add(st, target, false, false, "-") }

	uncont := func(st string, limit float64) {
		t := fmt.Sprintf("uncontended cycle p50 ≤ %.2f× floor", limit)
		b, f := find(rs, "baton", st, "uncontended", 0), find(rs, "floor", st, "floor", 0)
		if b == nil || f == nil || b.CycleP50 == nil || f.CycleP50 == nil {
			missing(st, t)
			return
		}
		r := ratio(*b.CycleP50, *f.CycleP50)
		add(st, t, r <= limit, true, fmt.Sprintf("%.2f× (%.0f µs vs %.0f µs)", r, *b.CycleP50, *f.CycleP50))
	}
	acq := func(st, peer string, limit float64) {
		t := fmt.Sprintf("acq/s ≥ %.1f× %s (8 contenders)", limit, peer)
		b, q := find(rs, "baton", st, "contended", 8), find(rs, peer, st, "contended", 8)
		if b == nil || q == nil {
			missing(st, t)
			return
		}
		r := ratio(b.AcqPerS, q.AcqPerS)
		m := fmt.Sprintf("%.2f× (%.0f vs %.0f)", r, b.AcqPerS, q.AcqPerS)
		lf, rf := find(rs, "layout floor", st, "contended", 8), find(rs, "relay floor", st, "contended", 8)
		if lf != nil && rf != nil {
			lr := ratio(lf.AcqPerS, q.AcqPerS)
			m += fmt.Sprintf("; floors in the same run: layout %.2f× (%.0f), relay %.2f× (%.0f)", lr, lf.AcqPerS, ratio(rf.AcqPerS, q.AcqPerS), rf.AcqPerS)
			if r < limit && lr < limit {
				cs = append(cs, check{st, t, m, "**missed**: out of reach here, the layout floor is under it too"})
				return
			}
		}
		add(st, t, r >= limit, true, m)
	}
	handoff := func(st string, limitMs float64) {
		t := fmt.Sprintf("hand-off p99 < %.0f ms (8 contenders)", limitMs)
		b := find(rs, "baton", st, "contended", 8)
		if b == nil || b.HandoffP99 == nil {
			missing(st, t)
			return
		}
		add(st, t, *b.HandoffP99/1000 < limitMs, true, fmt.Sprintf("%.2f ms", *b.HandoffP99/1000))
	}

	acq("zk", "go-zookeeper", 1.3)
	uncont("zk", 1.05)
	if h := find(rs, "baton", "zk", "herd", 1000); h != nil && h.FiresPerRelease != nil {
		add("zk", "exactly 1.0 notification per release, 1,000 waiters", *h.FiresPerRelease == 1, true, fmt.Sprintf("%.3f", *h.FiresPerRelease))
	} else {
		missing("zk", "exactly 1.0 notification per release, 1,000 waiters")
	}
	{
		// Session pings land in the count too (a few per run, unevenly):
		// a difference under 1% is no difference.
		t := "server requests/acq ≤ go-zookeeper's (8 contenders; within 1%, pings included)"
		b, q := find(rs, "baton", "zk", "contended", 8), find(rs, "go-zookeeper", "zk", "contended", 8)
		if b != nil && q != nil && b.ServerRequestsPerAcq != nil && q.ServerRequestsPerAcq != nil {
			add("zk", t, *b.ServerRequestsPerAcq <= *q.ServerRequestsPerAcq*1.01, true,
				fmt.Sprintf("%.3f vs %.3f", *b.ServerRequestsPerAcq, *q.ServerRequestsPerAcq))
		} else {
			missing("zk", t)
		}
	}
	for _, st := range []string{"etcd", "etcd34", "etcd-nofsync"} {
		if find(rs, "floor", st, "floor", 0) == nil && st != "etcd" {
			continue
		}
		acq(st, "concurrency.Mutex", 10)
		handoff(st, 5)
		uncont(st, 1.05)
	}
	handoff("redis", 2)
	{
		t := "FIFO (8 contenders): no back-to-back re-acquisition, longest waiter served"
		b := find(rs, "baton", "redis", "contended", 8)
		if b != nil && b.ReacquirePct != nil && b.FIFOPct != nil {
			add("redis", t, *b.ReacquirePct < 1 && *b.FIFOPct >= 99, true,
				fmt.Sprintf("re-acquired %.1f%%, FIFO %.1f%%", *b.ReacquirePct, *b.FIFOPct))
		} else {
			missing("redis", t)
		}
	}
	uncont("redlock5", 1.1)
	{
		t := "1,000 waiting Mutexes on one session, one process: RSS < 50 MB"
		if f := find(rs, "baton", "zk", "footprint", 0); f != nil && f.RSSMB != nil {
			m := fmt.Sprintf("%.1f MB (Go heap %.1f MB) in a process of baton + zk only", *f.RSSMB, val(f.HeapMB))
			if c := find(rs, "baton command", "zk", "footprint", 0); c != nil && c.RSSMB != nil {
				m += fmt.Sprintf("; %.1f MB in the baton command", *c.RSSMB)
			}
			add("zk", t, *f.RSSMB < 50, true, m)
		} else {
			missing("zk", t)
		}
	}
	return cs
}

// analysisFile is the hand-written reading of the latest run, included in
// the report after the targets table.
const analysisFile = "analysis.md"

func writeReport(path string, p plan, m machine, rs []bench.Result, notes []string) error {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Performance\n\n")
	w("Generated by `bench/` (`cd bench && go run . -out ../docs`) on %s; the run took %s.\n", m.Date, m.Elapsed.Round(time.Second))
	w("Each store's figures come from one run of that program against fresh local servers it started itself (stores re-run with `-keep` are dated in the run notes);\n")
	w("on each store, baton, the floors and the peer libraries ran the same workloads (`internal/bench`) in the same run.\n")
	w("Speed is measured here and never asserted in a timed test.\n\n")

	w("## Targets (issue 7: 8 contenders, same run)\n\n")
	w("| store | target | measured | verdict |\n|---|---|---|---|\n")
	for _, c := range checks(rs) {
		w("| %s | %s | %s | %s |\n", c.store, c.target, c.measured, c.verdict)
	}
	w("\n")
	writeRedisTargets(&b, rs)
	writeSentinelRows(&b, rs)
	writePgTargets(&b, rs)
	writeClusterTargets(&b, rs)
	if b, err := os.ReadFile(analysisFile); err == nil {
		w("\n%s\n", strings.TrimSpace(string(b)))
	}
	w("\n![wait p99 and acquisitions/s against contenders](bench-contenders.png)\n\n")
	w("Solid lines: baton; dashed: the peer library on the same server.\n\n")

	w("## All results\n\n")
	w("Times in milliseconds. `cycle`: one uncontended lock+unlock. `wait`: Lock call to return (a request still waiting when the run ends counts with its wait so far, so starved clients show). ")
	w("`hand-off`: a release returning → the next holder's Lock returning (0 when it was already running). ")
	w("`fires/rel`: watch notifications per release. `reacq %%`: acquisitions by the client that held the lock just before. ")
	w("`fifo %%`: acquisitions granted in arrival order (no client that had asked more than 1 ms earlier still waiting). `min/max`: acquisitions per client. ")
	w("Hand-off, re-acquisition, FIFO and min/max count only acquisitions after every client had asked once. ")
	w("`req/acq`: client requests the servers counted per acquisition. Clients `16×4`: 16 locks × 4 sessions.\n\n")
	_ = bench.WriteMarkdown(&b, rs)
	var withNotes []bench.Result
	for _, r := range rs {
		if r.Note != "" {
			withNotes = append(withNotes, r)
		}
	}
	if len(withNotes) > 0 {
		w("\nRow notes:\n\n")
		for _, r := range withNotes {
			w("- %s · %s · %s ×%d: %s\n", r.Impl, r.Store, r.Workload, r.Clients, r.Note)
		}
	}
	if len(notes) > 0 {
		w("\nRun notes:\n\n")
		for _, n := range notes {
			w("- %s\n", n)
		}
	}

	w("\n## How it was measured\n\n")
	w("- Servers, all on loopback, fresh for the run: ZooKeeper %s from Debian's jars (standalone, `tickTime=2000`, default `forceSync`), ", "3.8")
	w("etcd in-process (`etcd/embedded`, v3.7 server, default raft timings) as `etcd`, the same with fsync off and a 10 ms raft tick (`embedded.Config.Fast`) as `etcd-nofsync`, Debian's `/usr/bin/etcd` 3.4 as `etcd34`, ")
	w("three `baton serve` member processes on loopback (a cluster: default raft timings, fsync on, clients spread over the three) as `serve3`, ")
	w("redis-server 7.0 (no persistence) ×1 as `redis`, ×5 as `redlock5` and ×6 as `redis-cluster` (three masters, a replica each), ")
	w("PostgreSQL 15 from Debian's package (`initdb`, then `postgres` as the postgres user, `pg_stat_statements` preloaded) with its default durability (fsync, synchronous commit) as `postgres` and with fsync off as `postgres-nofsync`. ")
	w("On the etcd stores the 8-contender rounds also run `etcd-gateway`: etcd's server-side lock (v3lock) over its HTTP/JSON gateway, one lease per client, as a program in any language takes it (docs/any-language.md).\n")
	w("- Timed runs: %s at 8 contenders, %s otherwise (uncontended, floors, the other contender counts); contenders %v. ", p.duration, p.sweepDur, p.sweep)
	w("The figures the targets compare — floor and uncontended, and 8 contenders — ran in %d interleaved rounds (floor, baton, peer, floor, …) and the median round is reported (by cycle p50, by acquisitions/s). ", p.repeats)
	w("Herd waiters %v (on at most 100 sessions, joining 50 at a time, each counted in line and watching before the release).\n", p.herd)
	w("- baton: `baton.Mutex` (ZooKeeper, etcd) and baton's Redis `Mutex`/Redlock, each client its own session opened like the CLI does (`internal/store`).\n")
	w("- Peers: go-zookeeper `zk.NewLock` (v1.0.4), etcd `concurrency.Mutex` (client v3.7, one client and session per contender), ")
	w("redsync v4 with go-redis v9 (retry delay at its default 50–250 ms, tries unbounded so that no waiter gives up).\n")
	w("- Floors (`impl=floor`): the raw client operations of one cycle, with the stores' own Go clients: ZooKeeper create(ephemeral sequential) + getChildren + delete; ")
	w("etcd one Txn (put-if-absent under a lease + range of the prefix) + one Delete; Redis SET NX PX + EVAL compare-and-delete, sent to all five servers in parallel for Redlock.\n")
	w("- Contended floors on etcd (8 contenders, in the same interleaved rounds): the *relay floor* hands the lock on with one write to the next holder's key and one watch event, ")
	w("the least any lock on that server can cost per hand-off; the *layout floor* makes the store operations of etcd's `concurrency` layout, which baton keeps so that `etcdctl lock` interoperates ")
	w("(each acquisition writes its key, each release deletes it: two raft writes per cycle, each waiter watching the key before its own from the current revision), with the line kept in process, ")
	w("so it never lists or re-checks the line. No lock in that layout can beat the layout floor on the same server; both are `internal/bench`'s `EtcdRelay` and `EtcdLayoutFloor`.\n")
	w("- Contended floor on Redis (8 contenders, in the same interleaved rounds): the *relay floor* keeps the line in process and hands the lock on with one PUBLISH to the next waiter's channel, ")
	w("which the waiter reads on its own goroutine (on every master in parallel for Redlock, the waiter holding once a majority delivered): the fastest FIFO hand-off between clients on those servers (`internal/bench`'s `RedisRelay`).\n")
	w("- Contended floors on PostgreSQL (8 contenders, in the same interleaved rounds): the advisory lock (`impl=floor`, the hand-off inside the server's lock manager), and the *notify ring floor*, ")
	w("the physical limit of a LISTEN/NOTIFY lock with durable releases: the line kept in process, the releaser updates the lock's row and NOTIFYs the next waiter's channel in one autocommit statement, the waiter reads the row once (`internal/bench`'s `PostgresNotifyRing`).\n")
	w("- Server requests per acquisition are counted by the servers, not the clients: ZooKeeper `mntr` `zk_packets_received` deltas (less the probe's own packet; includes pings), ")
	w("etcd `/metrics` `grpc_server_msg_received_total` summed over methods (unary calls plus stream messages: watch creates/cancels, lease keep-alives), ")
	w("Redis `INFO stats` `total_commands_processed` (less the probe's own INFO), summed over servers — Redis counts the commands a Lua script runs as well, ")
	w("so the floor's SET + EVAL(GET, DEL) counts 4 per server; sampled at the start and at the end of the timed window.\n")
	w("- Watch notifications (herd): baton counts the notifications each session received (`baton.WatchCounter`); for the peers, the servers' own counts ")
	w("(ZooKeeper `mntr` `zk_sum_node_*_watch_count`, etcd `etcd_debugging_mvcc_events_total`). Waiters queue behind a holder, then each releases as soon as it runs; ")
	w("fires per release = notifications during the chain / acquisitions.\n")
	w("- Footprint: `bench/footprint` (a program of baton and its ZooKeeper backend only) in its own process: one session, 1,000 `Mutex` handles queued behind a holder on another session, ")
	w("VmRSS read from /proc after a GC and `debug.FreeOSMemory` (the row notes give the RSS before the waiters joined, before the GC, and the peak). ")
	w("`baton command` is the same measurement inside `baton bench --workload footprint` (a larger binary: it links an etcd server for `baton serve`).\n\n")

	w("## Machine\n\n")
	w("- CPU: %s, `nproc` = %s\n- Kernel: %s\n- Go: %s\n- /proc/loadavg before the run: %s; after: %s\n\n", m.CPU, m.Nproc, m.Kernel, m.GoVersion, m.LoadBefore, m.LoadAfter)
	w("```text\n$ free -m\n%s\n```\n\n", m.Free)

	w("## Commands\n\n")
	w("```sh no-run: the whole bench, about 10 minutes against servers it starts; writes docs/PERFORMANCE.md\nbench/run.sh -duration %s -sweep-duration %s -sweep %s -repeats %d -herd %s -stores %s\n```\n\n",
		p.duration, p.sweepDur, join(p.sweep), p.repeats, join(p.herd), strings.Join(p.stores, ","))
	w("(`bench/run.sh` is `cd bench && go run . -out ../docs \"$@\"`: each store runs in a child process of its own.)\n\n")
	w("One store again, the others' saved results kept (dated in the run notes):\n\n```sh no-run: about 5 minutes against servers it starts; rewrites docs/PERFORMANCE.md\n")
	w("bench/run.sh -stores postgres,postgres-nofsync -keep -repeats 5\n```\n\n")
	w("The same workloads against any running store, baton only:\n\n```sh no-run: needs those stores running (ZooKeeper on 2181, etcd on 2379, five Redis masters, a Sentinel-managed master, PostgreSQL on 5432)\n")
	w("baton bench --store zk://127.0.0.1:2181 --workload floor,uncontended,contended --clients 8 --duration 3s\n")
	w("baton bench --store etcd://127.0.0.1:2379 --workload herd --waiters 1000 --json\n")
	w("baton bench --store redlock://h1:6379,h2:6379,h3:6379,h4:6379,h5:6379 --workload floor,uncontended\n")
	w("baton bench --store redis-sentinel://s1:26379,s2:26379,s3:26379/mymaster --replicas 2 --workload floor,uncontended,contended\n")
	w("baton bench --store 'postgres://app@127.0.0.1:5432/app?sslmode=disable' --workload floor,uncontended,contended,herd --waiters 1000\n```\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func join(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, fmt.Sprint(n))
	}
	return strings.Join(s, ",")
}
