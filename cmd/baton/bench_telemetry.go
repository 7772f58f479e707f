package main

import (
	"context"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bench"
)

// sdkArm is the bench's instrumented setting: OpenTelemetry's SDK with
// metrics aggregated for a reader and spans batched to an exporter that
// drops them (the SDK's cost without an exporter's). stop shuts it down.
func sdkArm() (stop func(), arm bench.TelemetryArm) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
	stop = func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	}
	return stop, bench.TelemetryArm{Name: "sdk", Telemetry: baton.Telemetry{MeterProvider: mp, TracerProvider: tp}}
}

// discardSpans is a span exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }
