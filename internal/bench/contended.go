package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// loop runs every locker of every group in its own goroutine, lock+unlock
// back to back, from now until end. Lockers in one group contend for one
// lock. It returns the cycles acquired before end, per group, the requests
// still waiting at end (acq unset), the number of failed calls and the
// first failure.
func loop(ctx context.Context, groups [][]Locker, end time.Time, hold time.Duration) ([][]cycle, [][]cycle, int, string) {
	lockCtx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var errs atomic.Int64
	var first atomic.Value
	fail := func(err error) {
		errs.Add(1)
		first.CompareAndSwap(nil, err.Error())
	}
	recs := make([][][]cycle, len(groups))
	pend := make([][]cycle, len(groups))
	var pendMu sync.Mutex
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g, ls := range groups {
		recs[g] = make([][]cycle, len(ls))
		var order atomic.Int64
		for i, l := range ls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for time.Now().Before(end) {
					t0 := time.Now()
					if err := l.Lock(lockCtx); err != nil {
						if lockCtx.Err() != nil {
							pendMu.Lock()
							pend[g] = append(pend[g], cycle{client: i, req: t0})
							pendMu.Unlock()
							return
						}
						fail(err)
						continue
					}
					t1 := time.Now()
					k := order.Add(1)
					holdFor(hold)
					t2 := time.Now()
					if err := unlock(l); err != nil {
						fail(err)
					}
					t3 := time.Now()
					if t1.After(end) {
						return
					}
					recs[g][i] = append(recs[g][i], cycle{client: i, order: k, req: t0, acq: t1, rel: t2, done: t3})
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	out := make([][]cycle, len(groups))
	for g := range recs {
		for _, cs := range recs[g] {
			out[g] = append(out[g], cs...)
		}
	}
	msg, _ := first.Load().(string)
	return out, pend, int(errs.Load()), msg
}

// sampleAt reads the probe once end has come, while the loop still runs,
// so that the requests counted are those of the measured window.
func sampleAt(ctx context.Context, p Probe, end time.Time) <-chan Counters {
	ch := make(chan Counters, 1)
	go func() {
		t := time.NewTimer(time.Until(end))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		c, ok := sample(ctx, p)
		if !ok {
			c.Requests = -1
		}
		ch <- c
	}()
	return ch
}

func waits(cs []cycle) []time.Duration {
	ds := make([]time.Duration, len(cs))
	for i, c := range cs {
		ds[i] = c.acq.Sub(c.req)
	}
	return ds
}

// withPending adds the waits of the requests still pending at end, counted
// up to end: a client starved for the whole run must show in the tail.
func withPending(ds []time.Duration, pending []cycle, end time.Time) []time.Duration {
	for _, c := range pending {
		ds = append(ds, end.Sub(c.req))
	}
	return ds
}

// contended: N clients, each with its own session, on one lock.
func contended(ctx context.Context, t Target, cfg Config, r *Result) error {
	cs, err := openClients(ctx, t.Factory, cfg.Clients)
	if err != nil {
		return err
	}
	defer closeClients(cs)
	ls := make([]Locker, len(cs))
	for i, c := range cs {
		ls[i] = c.Locker(cfg.Name)
	}
	if err := warm(ctx, ls, 3); err != nil {
		return err
	}
	before, ok := sample(ctx, t.Probe)
	start := time.Now()
	end := start.Add(cfg.Duration)
	afterCh := sampleAt(ctx, t.Probe, end)
	recs, pend, errs, msg := loop(ctx, [][]Locker{ls}, end, cfg.Hold)
	after := <-afterCh
	r.Errors = errs
	if msg != "" {
		r.Note = "first error: " + msg
	}
	r.Acquisitions = len(recs[0])
	r.Seconds = cfg.Duration.Seconds()
	r.AcqPerS = float64(r.Acquisitions) / r.Seconds
	w := withPending(waits(recs[0]), pend[0], end)
	r.WaitP50, r.WaitP99 = percentile(w, 50), percentile(w, 99)
	chainStats(r, recs[0], pend[0], cfg.Clients)
	requestsPerAcq(r, before, after, ok && after.Requests >= 0, r.Acquisitions)
	return ctx.Err()
}

// many: Locks independent locks, each contended by one handle from each of
// Clients sessions.
func many(ctx context.Context, t Target, cfg Config, r *Result) error {
	cs, err := openClients(ctx, t.Factory, cfg.Clients)
	if err != nil {
		return err
	}
	defer closeClients(cs)
	groups := make([][]Locker, cfg.Locks)
	var all []Locker
	for g := range groups {
		for _, c := range cs {
			l := c.Locker(fmt.Sprintf("%s/l%03d", cfg.Name, g))
			groups[g] = append(groups[g], l)
		}
		all = append(all, groups[g][0])
	}
	if err := warm(ctx, all, 1); err != nil {
		return err
	}
	before, ok := sample(ctx, t.Probe)
	start := time.Now()
	end := start.Add(cfg.Duration)
	afterCh := sampleAt(ctx, t.Probe, end)
	recs, pend, errs, msg := loop(ctx, groups, end, cfg.Hold)
	after := <-afterCh
	if msg != "" {
		r.Note = "first error: " + msg
	}
	var w []time.Duration
	for g := range recs {
		r.Acquisitions += len(recs[g])
		w = append(w, withPending(waits(recs[g]), pend[g], end)...)
		var one Result
		chainStats(&one, recs[g], pend[g], cfg.Clients)
		r.Overlaps += one.Overlaps
	}
	r.Errors = errs
	r.Seconds = cfg.Duration.Seconds()
	r.AcqPerS = float64(r.Acquisitions) / r.Seconds
	r.WaitP50, r.WaitP99 = percentile(w, 50), percentile(w, 99)
	requestsPerAcq(r, before, after, ok && after.Requests >= 0, r.Acquisitions)
	return ctx.Err()
}
