package postgres

import (
	"time"

	"github.com/batonhq/baton"
)

// MinTTL is the smallest session TTL Open accepts.
const MinTTL = 100 * time.Millisecond

// Option configures Open.
type Option func(*options)

type options struct {
	ttl       time.Duration
	schema    string
	telemetry baton.Telemetry
	dropper   *dropper // tests: lose create replies
}

// WithTTL sets the TTL: how long a holder that goes silent (crashed, cut
// off, paused) keeps its locks before the store gives them to others. On
// PostgreSQL it is the session's, counted on the server's clock from its
// last renewal, and shared by every recipe on the session (default
// baton.DefaultTTL). A TTL below MinTTL makes Open fail with
// baton.ErrInvalidTTL.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithSchema names the schema of baton's tables (default DefaultSchema);
// it overrides the URL's schema= parameter. Clients share locks only
// within one schema.
func WithSchema(name string) Option { return func(o *options) { o.schema = name } }

// WithTelemetry makes the session and its recipes report metrics and
// spans to t (see baton.Telemetry); without it nothing is reported. Each
// confirmed renewal is a baton.session.renew.slack measurement.
func WithTelemetry(t baton.Telemetry) Option { return func(o *options) { o.telemetry = t } }
