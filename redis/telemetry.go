package redis

import (
	"context"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/handle"
	"github.com/batonhq/baton/internal/telemetry"
)

// WithTelemetry makes the lock report metrics and spans to t (see
// baton.Telemetry); without it nothing is reported. It reports with
// backend "redis" (Mutex) or "redlock" (Redlock) and recipe "mutex". Each renewal confirmed is a baton.session.renew.slack
// measurement (the time left of the lock's validity); a lease that ends
// because no renewal was confirmed in time is lost with reason
// renew_failed, one whose key no longer holds our value is revoked
// (node_deleted). Redis acquire spans carry no position in line.
func WithTelemetry(t baton.Telemetry) Option { return func(o *options) { o.tel = t } }

// observer reports one lock handle's acquisitions and holds; nil (no
// telemetry) reports nothing.
type observer struct {
	t *telemetry.T
	h *telemetry.Handle

	mu   sync.Mutex
	last *baton.Lease // the lease whose hold is being reported
}

// newObserver reports on the lock named name, its key (the name as
// written, baton.CleanName's rule), so that its name label is the one a
// lock of that name has on every store.
func newObserver(backend, name string, o options) *observer {
	t := telemetry.New(backend, telemetry.Config{
		MeterProvider:  o.tel.MeterProvider,
		TracerProvider: o.tel.TracerProvider,
		NameLabel:      o.tel.NameLabel,
		Health:         o.tel.Health,
	})
	if t == nil {
		return nil
	}
	t.SessionTTL(o.ttl)
	return &observer{t: t, h: t.Handle("mutex", name)}
}

// acquire runs acquire(ctx, try), reporting it, and starts reporting the
// hold of a new lease (a re-entrant acquisition returns the lease already
// reported).
func (o *observer) acquire(ctx context.Context, try bool, acquire func(context.Context, bool) (*baton.Lease, error), levels *handle.Reentrant[*liveLock, *baton.Lease]) (*baton.Lease, error) {
	if o == nil {
		return acquire(ctx, try)
	}
	a := o.h.StartAcquire(ctx)
	l, err := acquire(ctx, try)
	var token int64
	if l != nil {
		token = l.Token()
	}
	a.End(telemetry.Outcome(err), token, err)
	if err != nil {
		return l, err
	}
	o.mu.Lock()
	fresh := l != o.last
	o.last = l
	o.mu.Unlock()
	if !fresh {
		return l, nil
	}
	h, _, _ := levels.Current()
	var deadline func() time.Time
	if h != nil && h.lease == l {
		deadline = h.expiryTime
		f := o.t.Renewed
		h.renewed.Store(&f)
	}
	x := o.h.StartHold(a.Parent(), token, deadline)
	go func() {
		<-l.Done()
		end, reason := telemetry.End(l.Err())
		x.End(end, reason, l.Err())
	}()
	return l, nil
}
