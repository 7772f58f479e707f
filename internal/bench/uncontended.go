package bench

import (
	"context"
	"time"
)

// uncontended: one client, lock+unlock cycles back to back.
func uncontended(ctx context.Context, t Target, cfg Config, r *Result) error {
	cs, err := openClients(ctx, t.Factory, 1)
	if err != nil {
		return err
	}
	defer closeClients(cs)
	l := cs[0].Locker(cfg.Name)
	if err := warm(ctx, []Locker{l}, 20); err != nil {
		return err
	}
	before, ok := sample(ctx, t.Probe)
	var cycles, waits []time.Duration
	start := time.Now()
	end := start.Add(cfg.Duration)
	for time.Now().Before(end) && ctx.Err() == nil {
		t0 := time.Now()
		if err := l.Lock(ctx); err != nil {
			r.Errors++
			continue
		}
		t1 := time.Now()
		holdFor(cfg.Hold)
		if err := unlock(l); err != nil {
			r.Errors++
		}
		t2 := time.Now()
		cycles = append(cycles, t2.Sub(t0))
		waits = append(waits, t1.Sub(t0))
	}
	elapsed := time.Since(start)
	after, ok2 := sample(ctx, t.Probe)
	r.Acquisitions = len(cycles)
	r.Seconds = elapsed.Seconds()
	r.AcqPerS = float64(len(cycles)) / elapsed.Seconds()
	r.CycleP50, r.CycleP99 = percentile(cycles, 50), percentile(cycles, 99)
	r.WaitP50, r.WaitP99 = percentile(waits, 50), percentile(waits, 99)
	requestsPerAcq(r, before, after, ok && ok2, len(cycles))
	return ctx.Err()
}

// holdFor is the critical section of a measured cycle: d of nothing.
func holdFor(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}
