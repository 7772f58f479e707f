package memory

import (
	"time"

	"github.com/batonhq/baton"
)

// Option configures Store.Open.
type Option func(*options)

type options struct {
	ttl       time.Duration
	telemetry baton.Telemetry
}

// WithTTL sets the TTL: how long a holder that goes silent (crashed, cut
// off, paused) keeps its locks before the store gives them to others.
// Here it is the session's, shared by every recipe on the session
// (default baton.DefaultTTL); Partition cuts a session off. A TTL below
// MinTTL makes Open fail with baton.ErrInvalidTTL.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithTelemetry makes the session and its recipes report metrics and
// spans to t (see baton.Telemetry); without it nothing is reported.
func WithTelemetry(t baton.Telemetry) Option { return func(o *options) { o.telemetry = t } }
