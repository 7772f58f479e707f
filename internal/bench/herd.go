package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// queueTimeout bounds how long the waiters may take to line up, and
// chainTimeout how long the releases may take.
const (
	queueTimeout = 2 * time.Minute
	chainTimeout = 5 * time.Minute
)

// fires sums the watch notifications the clients received, or else reads
// the store's count. ok is false when neither is known.
func fires(ctx context.Context, cs []Client, p Probe) (n int64, src string, ok bool) {
	all := true
	for _, c := range cs {
		w, isW := c.(WatchCounter)
		if !isW {
			all = false
			break
		}
		n += w.WatchEvents()
	}
	if all {
		return n, "client watch events", true
	}
	if c, good := sample(ctx, p); good && c.HasFires {
		return c.Fires, "server watch notifications", true
	}
	return 0, "", false
}

// settle waits until the notification count stops moving (late
// notifications of a herd arrive after the last holder ran).
func settle(ctx context.Context, cs []Client, p Probe) int64 {
	last, _, _ := fires(ctx, cs, p)
	for range 40 {
		select {
		case <-ctx.Done():
			return last
		case <-time.After(50 * time.Millisecond):
		}
		n, _, _ := fires(ctx, cs, p)
		if n == last {
			return n
		}
		last = n
	}
	return last
}

// queue has waiters call Lock behind a held lock and returns once all are
// in line. Each waiter unlocks as soon as it acquires, so that releasing
// the holder starts a chain of hand-offs; cycles are recorded in recs.
type queue struct {
	wg       sync.WaitGroup
	firstErr atomic.Value // string
	recs     []cycle
	errs     atomic.Int64
	order    atomic.Int64
	gone     atomic.Int64
}

// queueBatch is how many waiters join the line at once: a burst of
// hundreds of creates and listings on a few sessions measures the burst,
// not the hand-off.
const queueBatch = 50

// start launches the waiters ls in batches, each once the one before is in
// line, and returns when all are (or with the first failure).
func (q *queue) start(ctx context.Context, c Client, name string, ls []Locker) error {
	q.recs = make([]cycle, len(ls))
	for lo := 0; lo < len(ls); lo += queueBatch {
		hi := min(lo+queueBatch, len(ls))
		for i := lo; i < hi; i++ {
			q.launch(ctx, i, ls[i])
		}
		if err := lineUp(ctx, c, name, hi+1, q); err != nil {
			return err
		}
	}
	return nil
}

func (q *queue) launch(ctx context.Context, i int, l Locker) {
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		defer q.gone.Add(1)
		t0 := time.Now()
		if err := l.Lock(ctx); err != nil {
			q.errs.Add(1)
			q.firstErr.CompareAndSwap(nil, err.Error())
			return
		}
		t1 := time.Now()
		k := q.order.Add(1)
		if err := unlock(l); err != nil {
			q.errs.Add(1)
			q.firstErr.CompareAndSwap(nil, err.Error())
		}
		q.recs[i] = cycle{client: i, order: k, req: t0, acq: t1, rel: t1, done: time.Now()}
	}()
}

// lineUp waits until want contenders are queued on name, or settles for a
// while when the client cannot count them.
func lineUp(ctx context.Context, c Client, name string, want int, q *queue) error {
	cn, ok := c.(Contenders)
	if !ok {
		d := 200*time.Millisecond + queueBatch*5*time.Millisecond
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	deadline := time.Now().Add(queueTimeout)
	for {
		n, err := cn.Contenders(ctx, name)
		if err != nil {
			return err
		}
		if n >= want {
			return nil
		}
		if q.gone.Load() > 0 {
			return fmt.Errorf("bench: %d waiters failed to queue: %v", q.errs.Load(), q.firstErr.Load())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: only %d of %d contenders queued after %v", n, want, queueTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// watchesSet waits until the store shows at least want more watches than
// base (every waiter is watching, not still setting up), for a bounded
// time; without a watch count it returns at once.
func watchesSet(ctx context.Context, p Probe, base Counters, want int) {
	if !base.HasWatches {
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		c, ok := sample(ctx, p)
		if !ok || c.Watches-base.Watches >= int64(want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waiterLockers spreads n handles on name over the clients.
func waiterLockers(cs []Client, name string, n int) []Locker {
	ls := make([]Locker, n)
	for i := range ls {
		ls[i] = cs[i%len(cs)].Locker(name)
	}
	return ls
}

// herdSessions is how many sessions the herd's waiters share at most.
const herdSessions = 100

// holdFirst warms up a locker of c on name and takes the lock with it:
// the holder the waiters of herd and footprint queue behind.
func holdFirst(ctx context.Context, c Client, name string) (Locker, error) {
	holder := c.Locker(name)
	if err := warm(ctx, []Locker{holder}, 3); err != nil {
		return nil, err
	}
	if err := holder.Lock(ctx); err != nil {
		return nil, err
	}
	return holder, nil
}

// herd: Clients waiters, spread over up to herdSessions sessions, queue
// behind a holder; the holder releases and each waiter releases as soon as
// it runs. Reports watch notifications per release and the chain's
// hand-off times.
func herd(ctx context.Context, t Target, cfg Config, r *Result) error {
	sessions := min(cfg.Clients, herdSessions)
	cs, err := openClients(ctx, t.Factory, sessions+1)
	if err != nil {
		return err
	}
	defer closeClients(cs)
	holder, err := holdFirst(ctx, cs[0], cfg.Name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, queueTimeout+chainTimeout)
	defer cancel()
	base, _ := sample(ctx, t.Probe)
	q := &queue{}
	defer q.wg.Wait()
	if err := q.start(ctx, cs[0], cfg.Name, waiterLockers(cs[1:], cfg.Name, cfg.Clients)); err != nil {
		_ = unlock(holder)
		return err
	}
	watchesSet(ctx, t.Probe, base, cfg.Clients)
	f0 := settle(ctx, cs, t.Probe)
	_, src, fok := fires(ctx, cs, t.Probe)
	before, ok := sample(ctx, t.Probe)
	start := time.Now()
	if err := unlock(holder); err != nil {
		return err
	}
	q.wg.Wait()
	elapsed := time.Since(start)
	f1 := settle(ctx, cs, t.Probe)
	after, ok2 := sample(ctx, t.Probe)

	r.Errors = int(q.errs.Load())
	r.Acquisitions = int(q.order.Load())
	r.Seconds = elapsed.Seconds()
	r.AcqPerS = float64(r.Acquisitions) / r.Seconds
	w := waits(q.recs)
	r.WaitP50, r.WaitP99 = percentile(w, 50), percentile(w, 99)
	chainStats(r, q.recs, nil, cfg.Clients)
	r.FIFOPct, r.ReacquirePct = nil, nil // queued all at once: neither says anything here
	r.Note = fmt.Sprintf("%d waiters on %d sessions", cfg.Clients, sessions)
	if fok && r.Acquisitions > 0 {
		r.FiresPerRelease = f64(float64(f1-f0) / float64(r.Acquisitions))
		r.Note += "; fires: " + src
	}
	if e := q.firstErr.Load(); e != nil {
		r.Note += fmt.Sprintf("; first error: %v", e)
	}
	requestsPerAcq(r, before, after, ok && ok2, r.Acquisitions)
	if ok && ok2 && after.HasFires && r.Acquisitions > 0 {
		r.ServerFiresPerRelease = f64(float64(after.Fires-before.Fires) / float64(r.Acquisitions))
	}
	return ctx.Err()
}

// footprint: Clients waiting handles on one session in this process; reports
// the process's RSS and Go heap with all of them queued.
func footprint(ctx context.Context, t Target, cfg Config, r *Result) error {
	cs, err := openClients(ctx, t.Factory, 2)
	if err != nil {
		return err
	}
	defer closeClients(cs)
	holder, err := holdFirst(ctx, cs[0], cfg.Name)
	if err != nil {
		return err
	}
	runtime.GC()
	debug.FreeOSMemory()
	baseRSS, _ := procStatus("VmRSS")
	ctx, cancel := context.WithTimeout(ctx, queueTimeout+chainTimeout)
	defer cancel()
	q := &queue{}
	defer q.wg.Wait()
	if err := q.start(ctx, cs[0], cfg.Name, waiterLockers(cs[1:], cfg.Name, cfg.Clients)); err != nil {
		_ = unlock(holder)
		return err
	}
	goroutines := runtime.NumGoroutine()
	// RSS as found includes garbage the runtime has not returned yet (the
	// listings each waiter read while joining); the footprint of the
	// waiting is what remains after a collection and a scavenge.
	rawRSS, _ := procStatus("VmRSS")
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.HeapMB = f64(float64(ms.HeapInuse) / (1 << 20))
	if rss, err := procStatus("VmRSS"); err == nil {
		r.RSSMB = f64(rss)
	}
	peak, _ := procStatus("VmHWM")
	start := time.Now()
	if err := unlock(holder); err != nil {
		return err
	}
	q.wg.Wait()
	r.Errors = int(q.errs.Load())
	r.Acquisitions = int(q.order.Load())
	r.Seconds = time.Since(start).Seconds()
	r.AcqPerS = float64(r.Acquisitions) / r.Seconds
	r.Note = fmt.Sprintf("waiters share one session; RSS %.1f MB before waiters joined, %.1f MB with them before a GC, peak %.1f MB; %d goroutines",
		baseRSS, rawRSS, peak, goroutines)
	return ctx.Err()
}

// procStatus reads a memory field (VmRSS, VmHWM) of this process from
// /proc, in MB.
func procStatus(field string) (float64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0, err
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("bench: no %s in /proc/self/status", field)
}
