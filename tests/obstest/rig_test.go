package obstest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/await"
)

// rig is one set of SDK providers: a manual metric reader and an
// in-memory span exporter.
type rig struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
	tel    baton.Telemetry
}

func newRig(t *testing.T) *rig {
	r := &rig{reader: sdkmetric.NewManualReader(), spans: tracetest.NewInMemoryExporter()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	r.tel = baton.Telemetry{MeterProvider: mp, TracerProvider: tp}
	return r
}

func (r *rig) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// attrs is a filter: every key given must have that value.
type attrs map[string]string

func (a attrs) match(s attribute.Set) bool {
	for k, v := range a {
		got, ok := s.Value(attribute.Key(k))
		if !ok || got.String() != v {
			return false
		}
	}
	return true
}

func find(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// histCount sums the counts of the histogram's points matching a; sum is
// their values' sum.
func histCount(rm metricdata.ResourceMetrics, name string, a attrs) (count uint64, sum float64) {
	m, ok := find(rm, name)
	if !ok {
		return 0, 0
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		return 0, 0
	}
	for _, p := range h.DataPoints {
		if a.match(p.Attributes) {
			count += p.Count
			sum += p.Sum
		}
	}
	return count, sum
}

// value is the sum of the matching points of a sum or gauge; ok is false
// without any.
func value(rm metricdata.ResourceMetrics, name string, a attrs) (v float64, ok bool) {
	m, found := find(rm, name)
	if !found {
		return 0, false
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if a.match(p.Attributes) {
				v, ok = v+float64(p.Value), true
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if a.match(p.Attributes) {
				v, ok = v+float64(p.Value), true
			}
		}
	case metricdata.Gauge[float64]:
		for _, p := range d.DataPoints {
			if a.match(p.Attributes) {
				v, ok = v+p.Value, true
			}
		}
	}
	return v, ok
}

// spansNamed returns the ended spans called name.
func (r *rig) spansNamed(name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range r.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func spanAttr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// store is one backend under test.
type store struct {
	name string
	// open opens a session reporting to tel.
	open func(t *testing.T, tel baton.Telemetry) *baton.Session
	// cut makes s lose contact with the store; heal restores it.
	cut func(t *testing.T, s *baton.Session) (heal func())
	// deleteNode deletes a node as another client would (an operator).
	deleteNode func(t *testing.T, n backend.Node)
}

var seq atomic.Int64

// path is a fresh recipe name, with an id in it (the name label strips it).
func path(what string) string { return fmt.Sprintf("/obstest/%s/%d/x", what, seq.Add(1)) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitValue waits (up to d) until the metric's matching points add up to
// want.
func (r *rig) waitValue(t *testing.T, d time.Duration, what, metric string, a attrs, want float64) {
	t.Helper()
	await.Until(t, d, what, func() bool {
		v, _ := value(r.collect(t), metric, a)
		return v == want
	})
}

// wantOutcomes checks the count of baton.acquire.duration points matching a
// for each outcome.
func wantOutcomes(t *testing.T, rm metricdata.ResourceMetrics, a attrs, want map[string]uint64) {
	t.Helper()
	for outcome, n := range want {
		if got, _ := histCount(rm, "baton.acquire.duration", with(a, "outcome", outcome)); got != n {
			t.Errorf("baton.acquire.duration{outcome=%s} count = %d, want %d", outcome, got, n)
		}
	}
}

// acquired is what a lock call started by goLock returned.
type acquired struct {
	l   *baton.Lease
	err error
}

// goLock runs lock on a goroutine of its own; its result arrives on the
// channel returned.
func goLock(ctx context.Context, lock func(context.Context) (*baton.Lease, error)) <-chan acquired {
	got := make(chan acquired, 1)
	go func() {
		l, err := lock(ctx)
		got <- acquired{l, err}
	}()
	return got
}

// cancelWaiting runs wait on a goroutine, waits (10 s at the most) until
// it counts in baton.waiting for a, cancels its ctx and wants it to return
// context.Canceled.
func (r *rig) cancelWaiting(t *testing.T, ctx context.Context, what string, a attrs, wait func(context.Context) error) {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- wait(cctx) }()
	r.waitValue(t, 10*time.Second, what, "baton.waiting", a, 1)
	cancel()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("%s, cancelled: %v, want context.Canceled", what, err)
	}
}
