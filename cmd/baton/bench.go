package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bench"
	"github.com/batonhq/baton/internal/store"
)

// defaultBenchWorkloads is what --workload all runs.
var defaultBenchWorkloads = []string{"floor", "uncontended", "contended", "herd", "many"}

// bench measures baton's Mutex on a store: `baton bench`.
func (m *Main) bench(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("bench", "bench [--store URL] [--workload W[,W…]|all] [--clients N] [--waiters W] [--locks M] [--duration D] [--hold D] [--json]", &sf, true)
	addReplicasFlag(fs, &sf)
	workloads := fs.String("workload", "all", "workloads: "+strings.Join(bench.Workloads, ", ")+", or all")
	clients := fs.Int("clients", 8, "contending sessions (contended, many)")
	waiters := fs.Int("waiters", 100, "queued waiters (herd, footprint)")
	locks := fs.Int("locks", 16, "independent locks (many)")
	duration := fs.Duration("duration", 3*time.Second, "how long each timed workload runs")
	hold := fs.Duration("hold", 0, "how long each acquisition is held (uncontended, floor, contended); 0 releases at once")
	asJSON := fs.Bool("json", false, "print one JSON object per result")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return usageErr("bench: unexpected arguments %q", strings.Join(pos, " "))
	}
	if err := checkBenchFlags(&sf, *clients, *waiters, *locks, *duration); err != nil {
		return err
	}
	list := defaultBenchWorkloads
	if *workloads != "all" {
		list = strings.Split(*workloads, ",")
		for _, w := range list {
			if !isWorkload(w) {
				return usageErr("bench: unknown workload %q (want %s or all)", w, strings.Join(bench.Workloads, ", "))
			}
		}
	}
	u, err := benchURL(sf.url)
	if err != nil {
		return usageErr("%v", err)
	}
	if err := u.CheckTLS(sf.tls); err != nil {
		return usageErr("%v", err)
	}
	batonT, floorT, err := bench.Targets(u, sf.options())
	if err != nil {
		return usageErr("%v", err)
	}
	if err := benchReachable(ctx, u, sf.options()); err != nil {
		return err
	}
	var rs []bench.Result
	for _, w := range list {
		cfg := bench.Config{Workload: w, Clients: *clients, Locks: *locks, Duration: *duration, Hold: *hold}
		t := batonT
		switch w {
		case "floor":
			t = floorT
		case "gateway":
			if t, err = bench.GatewayTarget(u); err != nil {
				return usageErr("%v", err)
			}
		case "herd", "footprint":
			cfg.Clients = *waiters
		}
		if w == "telemetry" {
			stop, sdk := sdkArm()
			trs, err := bench.TelemetryCost(ctx, batonT, cfg, append(bench.BaseArms(), sdk))
			stop()
			if err != nil {
				return fmt.Errorf("bench %s: %w", w, err)
			}
			for _, r := range trs {
				if *asJSON {
					if err := r.WriteJSON(m.Stdout); err != nil {
						return err
					}
				}
				rs = append(rs, r)
			}
			continue
		}
		r, err := bench.Run(ctx, t, cfg)
		if err != nil {
			return fmt.Errorf("bench %s: %w", w, err)
		}
		if *asJSON {
			if err := r.WriteJSON(m.Stdout); err != nil {
				return err
			}
		}
		rs = append(rs, r)
	}
	if !*asJSON {
		return bench.WriteTable(m.Stdout, rs)
	}
	return nil
}

func isWorkload(w string) bool {
	for _, k := range bench.Workloads {
		if w == k {
			return true
		}
	}
	return false
}

// benchURL parses the store URL; memory:// is an in-process store shared
// by the bench's sessions.
func benchURL(raw string) (store.URL, error) {
	if raw == "memory://" || raw == "memory:" {
		return store.URL{Scheme: store.Memory}, nil
	}
	return store.Parse(raw)
}

// checkBenchFlags refuses, before anything is dialled, what the workloads
// would otherwise replace with their defaults without a word: no clients,
// waiters or locks, no duration, and the durations every command checks.
func checkBenchFlags(sf *storeFlags, clients, waiters, locks int, duration time.Duration) error {
	if err := sf.checkDurations(); err != nil {
		return err
	}
	if sf.url == "" {
		return sf.usageErr("--store is empty (want a store URL, or leave --store out for $BATON_STORE or %s)", defaultStore)
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"clients", clients}, {"waiters", waiters}, {"locks", locks}} {
		if f.n < 1 {
			return usageErr("bench: --%s %d: must be at least 1", f.name, f.n)
		}
	}
	if duration <= 0 {
		return usageErr("bench: --duration %v: must be positive", duration)
	}
	return nil
}

// benchReachable opens one session on the store within --dial-timeout and
// closes it, so that a store that cannot be reached fails the bench at
// once (exit 1, one line) instead of leaving a workload's own clients,
// the raw clients of the floor among them, waiting on it.
func benchReachable(ctx context.Context, u store.URL, o store.Options) error {
	if u.InProcess() {
		return nil
	}
	s, err := store.Open(ctx, u, o)
	if errors.Is(err, store.ErrBadTLS) || errors.Is(err, baton.ErrInvalidTTL) {
		return usageErr("%v", err)
	}
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = s.Close(cctx)
	return nil
}
