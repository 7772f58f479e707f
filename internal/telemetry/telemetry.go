// Package telemetry holds baton's instruments: the metrics and spans every
// recipe reports through OpenTelemetry's APIs. A nil *T, *Handle, *Acquire
// or *Hold does nothing, so a session without providers pays one nil check
// per event.
package telemetry

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of baton's meters and tracers.
const ScopeName = "github.com/batonhq/baton"

// Metric names: an exact contract (docs/OBSERVABILITY.md).
const (
	MetricAcquireDuration   = "baton.acquire.duration"
	MetricHoldDuration      = "baton.hold.duration"
	MetricWaiting           = "baton.waiting"
	MetricHeld              = "baton.held"
	MetricLost              = "baton.lost"
	MetricRenewSlack        = "baton.session.renew.slack"
	MetricSessionTTL        = "baton.session.ttl"
	MetricLeader            = "baton.leader"
	MetricLeaderTransitions = "baton.leader.transitions"
	MetricQueueDepth        = "baton.queue.depth"
	MetricQueueOldestAge    = "baton.queue.oldest_age"
	MetricSemaphorePermits  = "baton.semaphore.permits"
)

// Attribute keys.
const (
	KeyBackend = attribute.Key("backend")
	KeyRecipe  = attribute.Key("recipe")
	KeyName    = attribute.Key("name")
	KeyOutcome = attribute.Key("outcome")
	KeyEnd     = attribute.Key("end")
	KeyReason  = attribute.Key("reason")
	KeyState   = attribute.Key("state")
)

// Outcomes of an acquisition (baton.acquire.duration's outcome).
const (
	OutcomeAcquired = "acquired"
	OutcomeTimeout  = "timeout"
	OutcomeCanceled = "canceled"
	OutcomeError    = "error"
)

// Ends of a hold (baton.hold.duration's end).
const (
	EndReleased = "released"
	EndLost     = "lost"
	EndRevoked  = "revoked"
)

// Reasons for a loss (baton.lost's reason).
const (
	ReasonSessionExpired = "session_expired"
	ReasonSessionLost    = "session_lost"
	ReasonNodeDeleted    = "node_deleted"
	ReasonRenewFailed    = "renew_failed"
)

// Config says where a session reports. The zero Config reports nothing.
type Config struct {
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	// NameLabel maps a recipe's name to its name attribute; nil means
	// DefaultNameLabel.
	NameLabel func(name string) string
	// Health, if set, learns of every hold so that its handler can fail
	// when one outlives its deadline.
	Health *Health
}

// T is one session's (or one Redis client's) telemetry.
type T struct {
	backend string
	label   func(string) string
	inst    *instruments // nil without a MeterProvider
	tracer  trace.Tracer // nil without a TracerProvider
	health  *Health      // nil without one
	slack   metric.MeasurementOption
}

// New returns the telemetry of a session on backend, or nil when c
// reports nothing.
func New(backend string, c Config) *T {
	// OpenTelemetry's no-op providers are no providers: skip them
	// altogether rather than make no-op calls.
	if _, ok := c.MeterProvider.(metricnoop.MeterProvider); ok {
		c.MeterProvider = nil
	}
	if _, ok := c.TracerProvider.(tracenoop.TracerProvider); ok {
		c.TracerProvider = nil
	}
	if c.MeterProvider == nil && c.TracerProvider == nil && c.Health == nil {
		return nil
	}
	t := &T{backend: backend, label: c.NameLabel, health: c.Health}
	if t.label == nil {
		t.label = DefaultNameLabel
	}
	if c.MeterProvider != nil {
		t.inst = newInstruments(c.MeterProvider.Meter(ScopeName))
		t.slack = metric.WithAttributeSet(attribute.NewSet(KeyBackend.String(backend)))
	}
	if c.TracerProvider != nil {
		t.tracer = c.TracerProvider.Tracer(ScopeName)
	}
	return t
}

// SessionTTL records the TTL of a session (or of a Redis lock) in force,
// the scale against which renew slack is judged.
func (t *T) SessionTTL(ttl time.Duration) {
	if t == nil || t.inst == nil {
		return
	}
	t.inst.ttl.Record(bg, ttl.Seconds(), t.slack)
}

// Renewed records a confirmed renewal of the session with slack left
// before the session would have been given up.
func (t *T) Renewed(slack time.Duration) {
	if t == nil || t.inst == nil {
		return
	}
	t.inst.renewSlack.Record(bg, slack.Seconds(), t.slack)
}
