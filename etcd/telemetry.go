package etcd

import (
	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// WithTelemetry makes the session and its recipes report metrics and
// spans to t (see baton.Telemetry); without it nothing is reported. Each acknowledged keepalive is a
// baton.session.renew.slack measurement.
func WithTelemetry(t baton.Telemetry) Option { return func(o *options) { o.telemetry = t } }

var (
	_ backend.Renewer   = (*conn)(nil) // telemetry.Renewals, at each acknowledged keepalive
	_ backend.Backender = (*conn)(nil)
)

// Backend is "etcd".
func (c *conn) Backend() string { return "etcd" }
