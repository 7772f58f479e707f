package zk

import (
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// WithTelemetry makes the session and its recipes report metrics and
// spans to t (see baton.Telemetry); without it nothing is reported.
// Renewals are the server's replies: each
// one that advances the last confirmed contact is a baton.session.renew.slack
// measurement.
func WithTelemetry(t baton.Telemetry) Option { return func(o *options) { o.telemetry = t } }

var (
	_ backend.Renewer   = (*conn)(nil)
	_ backend.Backender = (*conn)(nil)
)

// Backend is "zk".
func (c *conn) Backend() string { return "zk" }

// OnRenew makes f be called at each reply that confirms contact, with the
// time that was left before the deadline.
func (c *conn) OnRenew(f func(slack time.Duration)) { c.w.renewals.OnRenew(f) }
