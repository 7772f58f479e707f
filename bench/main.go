// Command bench runs baton, the floors and the peer libraries
// (go-zookeeper's Lock, etcd's concurrency.Mutex, redsync) with the same
// workloads on fresh local servers, and writes docs/PERFORMANCE.md, its
// chart and the raw results.
//
//	cd bench && go run . -out ../docs
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// plan is what one run measures.
type plan struct {
	duration time.Duration // each timed workload
	sweepDur time.Duration // contended runs at other than 8 contenders
	sweep    []int         // contenders for the chart
	repeats  int           // runs at 8 contenders (the median is kept)
	herd     []int         // waiters
	stores   []string
	batonBin string // baton binary for the footprint, "" to skip
	out      string

	child  string // run only this store, writing results to -out
	render bool   // rebuild the report from the saved results only
	keep   bool   // keep the saved results of the stores not run
}

func main() {
	var p plan
	var sweep, herd, stores string
	flag.DurationVar(&p.duration, "duration", 3*time.Second, "how long each timed workload runs")
	flag.DurationVar(&p.sweepDur, "sweep-duration", 2*time.Second, "how long each contended run at other than 8 contenders runs")
	flag.StringVar(&sweep, "sweep", "2,4,8,16,32,64", "contender counts for the contended workload")
	flag.IntVar(&p.repeats, "repeats", 3, "runs at 8 contenders; the median (by acquisitions/s) is reported")
	flag.StringVar(&herd, "herd", "10,100,1000", "waiter counts for the herd workload")
	flag.StringVar(&stores, "stores", "zk,etcd,etcd34,etcd-nofsync,serve3,redis,redlock5,redis-cluster", "stores to run")
	flag.StringVar(&p.batonBin, "baton", "", "baton binary for the footprint workload (built if empty)")
	flag.StringVar(&p.out, "out", "../docs", "directory for PERFORMANCE.md, the chart and the raw results")
	flag.StringVar(&p.child, "child", "", "internal: run this one store in this process and write JSON lines to -out")
	flag.BoolVar(&p.keep, "keep", false, "keep the saved results of the stores not run (from -out), with a note saying when they ran")
	flag.BoolVar(&p.render, "render", false, "rebuild PERFORMANCE.md and the chart from the results saved in -out, without running")
	flag.Parse()
	p.sweep = ints(sweep)
	p.herd = ints(herd)
	p.stores = strings.Split(stores, ",")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	run := run
	switch {
	case p.child != "":
		run = runChild
	case p.render:
		run = render
	}
	if err := run(ctx, p); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

func run(ctx context.Context, p plan) error {
	start := time.Now()
	base, err := os.MkdirTemp("", "baton-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	if err := os.MkdirAll(p.out, 0o755); err != nil {
		return err
	}
	env := describeMachine()
	if p.batonBin == "" {
		p.batonBin = filepath.Join(base, "baton")
		if err := buildBaton(p.batonBin); err != nil {
			logf("footprint skipped: %v", err)
			p.batonBin = ""
		}
	}
	var notes []string
	k := p.keepOthers()
	raw, err := os.Create(filepath.Join(p.out, "bench-results.jsonl"))
	if err != nil {
		return err
	}
	defer raw.Close()
	for _, r := range k.results {
		_ = r.WriteJSON(raw)
	}
	notes = append(notes, k.notes...)
	for _, st := range p.stores {
		if ctx.Err() != nil {
			break
		}
		rs, n, err := runInChild(ctx, p, base, st)
		for _, r := range rs {
			_ = r.WriteJSON(raw)
		}
		notes = append(notes, n...)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: %v", st, err))
			logf("%s: %v", st, err)
		}
	}
	env.Elapsed = time.Since(start)
	env.LoadAfter = sh("cat", "/proc/loadavg")
	sp := p.saved()
	sp.Stores = append(k.stores, sp.Stores...)
	measured := map[string]string{}
	for st, w := range k.measured {
		measured[st] = w
	}
	for _, st := range p.stores {
		measured[st] = env.when()
	}
	if err := saveRun(filepath.Join(p.out, runFile), savedRun{Plan: sp, Machine: env, Notes: notes, Measured: measured}); err != nil {
		return err
	}
	return render(ctx, p)
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
}
