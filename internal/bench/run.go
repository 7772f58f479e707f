package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
)

// unlockTimeout bounds one Unlock and one Close.
const unlockTimeout = 10 * time.Second

// Run runs one workload on t and returns its measurement.
func Run(ctx context.Context, t Target, cfg Config) (Result, error) {
	if cfg.Name == "" {
		cfg.Name = UniqueName()
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Second
	}
	r := Result{Impl: t.Impl, Store: t.Store, Workload: cfg.Workload, Clients: cfg.Clients}
	var err error
	switch cfg.Workload {
	case "uncontended", "floor":
		r.Clients = 1
		err = uncontended(ctx, t, cfg, &r)
	case "contended", "gateway":
		if cfg.Clients < 1 {
			cfg.Clients, r.Clients = 8, 8
		}
		err = contended(ctx, t, cfg, &r)
	case "herd":
		if cfg.Clients < 1 {
			cfg.Clients, r.Clients = 100, 100
		}
		err = herd(ctx, t, cfg, &r)
	case "many":
		if cfg.Clients < 1 {
			cfg.Clients, r.Clients = 4, 4
		}
		if cfg.Locks < 1 {
			cfg.Locks = 16
		}
		r.Locks = cfg.Locks
		err = many(ctx, t, cfg, &r)
	case "telemetry":
		return r, fmt.Errorf("bench: the telemetry workload is run by TelemetryCost")
	case "footprint":
		if cfg.Clients < 1 {
			cfg.Clients, r.Clients = 1000, 1000
		}
		err = footprint(ctx, t, cfg, &r)
	default:
		return r, fmt.Errorf("bench: unknown workload %q (want one of %v)", cfg.Workload, Workloads)
	}
	return r, err
}

// UniqueName returns a fresh lock name, valid as a ZooKeeper path, an etcd
// prefix and a Redis key.
func UniqueName() string { return "/baton-bench/" + uuid.NewString() }

// openClients opens n clients, a few at a time.
func openClients(ctx context.Context, f Factory, n int) ([]Client, error) {
	cs := make([]Client, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range cs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cs[i], errs[i] = f.Open(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeClients(cs)
		return nil, fmt.Errorf("bench: open clients: %w", err)
	}
	return cs, nil
}

func closeClients(cs []Client) {
	var wg sync.WaitGroup
	for _, c := range cs {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
			defer cancel()
			_ = c.Close(ctx)
		}()
	}
	wg.Wait()
}

func unlock(l Locker) error {
	ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
	defer cancel()
	return l.Unlock(ctx)
}

// warm runs a few uncontended cycles on each locker in turn: it creates the
// lock's parents and warms the server's and the clients' code paths.
func warm(ctx context.Context, ls []Locker, cycles int) error {
	for _, l := range ls {
		for range cycles {
			if err := l.Lock(ctx); err != nil {
				return fmt.Errorf("bench: warm-up lock: %w", err)
			}
			if err := unlock(l); err != nil {
				return fmt.Errorf("bench: warm-up unlock: %w", err)
			}
		}
	}
	return nil
}

// sample reads the probe, or returns zero counters without one.
func sample(ctx context.Context, p Probe) (Counters, bool) {
	if p == nil {
		return Counters{}, false
	}
	c, err := p.Sample(ctx)
	return c, err == nil
}

// requestsPerAcq sets r.ServerRequestsPerAcq from two probe samples.
func requestsPerAcq(r *Result, before, after Counters, ok bool, acq int) {
	if ok && acq > 0 {
		r.ServerRequestsPerAcq = f64(float64(after.Requests-before.Requests) / float64(acq))
		if after.HasRoundTrips {
			r.ServerRoundTripsPerAcq = f64(float64(after.RoundTrips-before.RoundTrips) / float64(acq))
		}
		if after.HasServerTime {
			r.ServerUsPerAcq = f64(float64((after.ServerTime - before.ServerTime).Nanoseconds()) / 1000 / float64(acq))
		}
	}
}
