package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/batonhq/baton"
)

// TelemetryArm is one instrumentation setting the telemetry workload
// compares.
type TelemetryArm struct {
	Name      string
	Telemetry baton.Telemetry
}

// BaseArms are the settings every telemetry run compares: none (the
// default) and OpenTelemetry's no-op providers. The caller adds the SDK's
// (the bench's module has it; the library's does not).
func BaseArms() []TelemetryArm {
	return []TelemetryArm{
		{Name: "off"},
		{Name: "noop", Telemetry: baton.Telemetry{MeterProvider: metricnoop.NewMeterProvider(), TracerProvider: tracenoop.NewTracerProvider()}},
	}
}

// TelemetryCost measures the uncontended cycle with each instrumentation
// setting in the same run: one session's connection carries one session
// per arm, each on a lock name of its own, and the arms take turns in
// rounds of equal length, so that drift in the store or the machine falls
// on all of them alike. It returns one result per arm (Impl
// "baton+telemetry=<arm>"), with the median and spread of the per-round
// cycle p50 in Note. Only stores with sessions (zk, etcd, memory) apply.
func TelemetryCost(ctx context.Context, t Target, cfg Config, arms []TelemetryArm) ([]Result, error) {
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Second
	}
	rounds := cfg.Rounds
	if rounds == 0 {
		rounds = 15
	}
	rounds = max(rounds, 3)
	if cfg.Name == "" {
		cfg.Name = UniqueName()
	}
	cs, err := openClients(ctx, t.Factory, 1)
	if err != nil {
		return nil, err
	}
	defer closeClients(cs)
	sc, ok := cs[0].(sessionClient)
	if !ok {
		return nil, fmt.Errorf("bench: telemetry: %s on %s has no session", t.Impl, t.Store)
	}
	conn := sc.s.Session.Conn()
	locks := make([]*baton.Mutex, len(arms))
	for i, arm := range arms {
		s := baton.NewSession(conn, arm.Telemetry)
		locks[i] = baton.NewMutex(s, fmt.Sprintf("%s-%s", cfg.Name, arm.Name))
		for range 20 { // warm up
			if err := cycleOnce(ctx, locks[i]); err != nil {
				return nil, err
			}
		}
	}
	all := make([][]time.Duration, len(locks))
	p50s := make([][]float64, len(locks))
	errs := make([]int, len(locks))
	slot := cfg.Duration / time.Duration(rounds*len(locks))
	start := time.Now()
	for round := range rounds {
		for k := range locks {
			i := (k + round) % len(locks) // rotate who goes first
			var ds []time.Duration
			end := time.Now().Add(slot)
			for time.Now().Before(end) && ctx.Err() == nil {
				t0 := time.Now()
				if err := cycleOnce(ctx, locks[i]); err != nil {
					errs[i]++
					continue
				}
				ds = append(ds, time.Since(t0))
			}
			all[i] = append(all[i], ds...)
			if p := percentile(ds, 50); p != nil {
				p50s[i] = append(p50s[i], *p)
			}
		}
	}
	elapsed := time.Since(start) / time.Duration(len(locks))
	var rs []Result
	for i, arm := range arms {
		r := Result{Impl: "baton+telemetry=" + arm.Name, Store: t.Store, Workload: "telemetry", Clients: 1,
			Acquisitions: len(all[i]), Seconds: elapsed.Seconds(), Errors: errs[i]}
		r.AcqPerS = float64(len(all[i])) / elapsed.Seconds()
		r.CycleP50, r.CycleP99 = percentile(all[i], 50), percentile(all[i], 99)
		med, lo, hi := spread(p50s[i])
		r.Note = fmt.Sprintf("cycle p50 over %d interleaved rounds: median %.2f µs, range %.2f–%.2f µs", len(p50s[i]), med, lo, hi)
		rs = append(rs, r)
	}
	return rs, ctx.Err()
}

func cycleOnce(ctx context.Context, m *baton.Mutex) error {
	if _, err := m.Lock(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
	defer cancel()
	return m.Unlock(ctx)
}

// spread is the median, min and max of xs.
func spread(xs []float64) (med, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, s[0], s[len(s)-1]
}
