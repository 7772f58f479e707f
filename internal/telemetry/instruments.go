package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/metric"
)

// bg is the context measurements are recorded with: baton's measurements
// carry no exemplar or baggage from the caller.
var bg = context.Background()

// Bucket boundaries, in seconds. Waits and renew slack span a millisecond
// to a minute; holds a millisecond to an hour.
var (
	waitBuckets  = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	holdBuckets  = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600}
	slackBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 4, 5, 7.5, 10, 15, 30, 60}
)

type instruments struct {
	acquire     metric.Float64Histogram
	hold        metric.Float64Histogram
	waiting     metric.Int64UpDownCounter
	held        metric.Int64UpDownCounter
	lost        metric.Int64Counter
	renewSlack  metric.Float64Histogram
	ttl         metric.Float64Gauge
	leader      metric.Int64Gauge
	transitions metric.Int64Counter
	depth       metric.Int64Gauge
	oldest      metric.Float64Gauge
	permits     metric.Int64Gauge
}

// newInstruments makes the instrument set on m. An instrument the meter
// refuses is replaced by its no-op (the API returns one with the error).
func newInstruments(m metric.Meter) *instruments {
	i := &instruments{}
	i.acquire, _ = m.Float64Histogram(MetricAcquireDuration, metric.WithUnit("s"),
		metric.WithDescription("Time from an acquire call to its outcome (acquired, timeout, canceled, error)."),
		metric.WithExplicitBucketBoundaries(waitBuckets...))
	i.hold, _ = m.Float64Histogram(MetricHoldDuration, metric.WithUnit("s"),
		metric.WithDescription("Time a lease was held, by how it ended (released, lost, revoked)."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	i.waiting, _ = m.Int64UpDownCounter(MetricWaiting,
		metric.WithDescription("Acquire calls of this process waiting in line."))
	i.held, _ = m.Int64UpDownCounter(MetricHeld,
		metric.WithDescription("Leases this process holds."))
	i.lost, _ = m.Int64Counter(MetricLost,
		metric.WithDescription("Leases lost while held, by reason."))
	i.renewSlack, _ = m.Float64Histogram(MetricRenewSlack, metric.WithUnit("s"),
		metric.WithDescription("Time left before the session or lock would have been given up, when a renewal was confirmed."),
		metric.WithExplicitBucketBoundaries(slackBuckets...))
	i.ttl, _ = m.Float64Gauge(MetricSessionTTL, metric.WithUnit("s"),
		metric.WithDescription("TTL of the sessions (or Redis locks) in force: renew slack under half of it means renewals are late."))
	i.leader, _ = m.Int64Gauge(MetricLeader,
		metric.WithDescription("1 while this process leads the election, else 0."))
	i.transitions, _ = m.Int64Counter(MetricLeaderTransitions,
		metric.WithDescription("Times this process became leader."))
	i.depth, _ = m.Int64Gauge(MetricQueueDepth,
		metric.WithDescription("Items in the queue at this process's last listing."))
	i.oldest, _ = m.Float64Gauge(MetricQueueOldestAge, metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest item at this process's last listing (0 when empty or unknown)."))
	i.permits, _ = m.Int64Gauge(MetricSemaphorePermits,
		metric.WithDescription("Semaphore permits at this process's last listing, by state (held, free)."))
	return i
}
