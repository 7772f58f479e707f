package telemetry

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Handle is the telemetry of one recipe handle (one name): its attribute
// sets are computed once, when the handle is made.
type Handle struct {
	t      *T
	recipe string
	name   string // as given, for spans
	base   []attribute.KeyValue
	attrs  metric.MeasurementOption // backend, recipe, name
	span   []attribute.KeyValue     // span attributes
	leader bool                     // an election: a hold is a leadership
	sets   sync.Map                 // extra → metric.MeasurementOption
}

// The recipes whose holds are leaderships: they set baton.leader and count
// baton.leader.transitions.
const (
	RecipeElection       = "election"
	RecipeLeaderSelector = "leader_selector"
)

// RecipeBarrier is the recipe that only waits: it holds nothing, so it
// reports no baton.lost series.
const RecipeBarrier = "barrier"

// Handle returns the telemetry of a recipe handle on name, or nil when t
// is nil.
func (t *T) Handle(recipe, name string) *Handle {
	if t == nil {
		return nil
	}
	base := []attribute.KeyValue{KeyBackend.String(t.backend), KeyRecipe.String(recipe), KeyName.String(t.label(name))}
	h := &Handle{
		t:      t,
		recipe: recipe,
		name:   name,
		leader: recipe == RecipeElection || recipe == RecipeLeaderSelector,
		base:   base,
		attrs:  metric.WithAttributeSet(attribute.NewSet(base...)),
		span: []attribute.KeyValue{
			attribute.String("baton.backend", t.backend),
			attribute.String("baton.recipe", recipe),
			attribute.String("baton.name", name),
		},
	}
	if t.inst != nil && recipe != RecipeBarrier {
		// Counters start at zero, so that Prometheus's increase() sees
		// the first loss of a name (a series born at 1 shows none).
		for _, r := range []string{ReasonSessionExpired, ReasonSessionLost, ReasonNodeDeleted, ReasonRenewFailed} {
			t.inst.lost.Add(bg, 0, h.with(KeyReason, r))
		}
	}
	return h
}

// with is the handle's attribute set plus key=value, made once per handle
// and value (the values are the few constants of this package).
func (h *Handle) with(key attribute.Key, value string) metric.MeasurementOption {
	k := extra{key, value}
	if o, ok := h.sets.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	all := append(append(make([]attribute.KeyValue, 0, len(h.base)+1), h.base...), key.String(value))
	o, _ := h.sets.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(all...)))
	return o.(metric.MeasurementOption)
}

type extra struct {
	key   attribute.Key
	value string
}

// Acquire is one acquire call in progress.
type Acquire struct {
	h        *Handle
	parent   context.Context
	start    time.Time
	span     trace.Span
	attempts int
	position int
	waiting  bool
}

// StartAcquire begins an acquire call: its span and its clock.
func (h *Handle) StartAcquire(ctx context.Context) *Acquire {
	if h == nil {
		return nil
	}
	a := &Acquire{h: h, parent: ctx, start: time.Now(), attempts: 1, position: -1}
	if h.t.tracer != nil {
		_, a.span = h.t.tracer.Start(ctx, "baton.acquire")
		if a.span.IsRecording() {
			a.span.SetAttributes(h.span...)
		} else {
			a.span = nil
		}
	}
	return a
}

// Queued records our position in line when we joined it: the number of
// contenders ahead of us.
func (a *Acquire) Queued(position int) {
	if a == nil {
		return
	}
	a.position = position
}

// Wait records that the call is about to wait for a contender ahead. The
// first wait counts it in baton.waiting; every wait after the first is
// another attempt.
func (a *Acquire) Wait() {
	if a == nil {
		return
	}
	if a.waiting {
		a.attempts++
		return
	}
	a.waiting = true
	if i := a.h.t.inst; i != nil {
		i.waiting.Add(bg, 1, a.h.attrs)
	}
}

// Retry records another attempt (Redis: another SET after a wait).
func (a *Acquire) Retry() {
	if a == nil {
		return
	}
	a.attempts++
}

// End records the call's outcome (an Outcome constant) and, when acquired,
// the token of the acquisition.
func (a *Acquire) End(outcome string, token int64, err error) {
	if a == nil {
		return
	}
	a.end(outcome, token, true, err)
}

// EndWait records the outcome of a wait that acquires nothing with a token
// (a barrier passed).
func (a *Acquire) EndWait(outcome string, err error) {
	if a == nil {
		return
	}
	a.end(outcome, 0, false, err)
}

func (a *Acquire) end(outcome string, token int64, hasToken bool, err error) {
	if i := a.h.t.inst; i != nil {
		if a.waiting {
			i.waiting.Add(bg, -1, a.h.attrs)
		}
		i.acquire.Record(bg, time.Since(a.start).Seconds(), a.h.with(KeyOutcome, outcome))
	}
	if a.span != nil {
		attrs := []attribute.KeyValue{
			attribute.String("baton.outcome", outcome),
			attribute.Int("baton.attempts", a.attempts),
		}
		if a.position >= 0 {
			attrs = append(attrs, attribute.Int("baton.position", a.position))
		}
		if outcome == OutcomeAcquired && hasToken {
			attrs = append(attrs, attribute.Int64("baton.token", token))
		} else if err != nil {
			a.span.RecordError(err)
			if outcome == OutcomeError {
				a.span.SetStatus(codes.Error, err.Error())
			}
		}
		a.span.SetAttributes(attrs...)
		a.span.End()
	}
}

// Parent is the context the acquire call was made with.
func (a *Acquire) Parent() context.Context {
	if a == nil {
		return nil
	}
	return a.parent
}

// Hold is one lease from acquisition to its end.
type Hold struct {
	h        *Handle
	start    time.Time
	span     trace.Span
	deadline func() time.Time
}

// StartHold begins a hold of the lease with token, acquired in a call
// made with ctx. deadline, if not nil, is the moment the holder must have
// learned of a loss by (the health check fails past it).
func (h *Handle) StartHold(ctx context.Context, token int64, deadline func() time.Time) *Hold {
	if h == nil {
		return nil
	}
	x := &Hold{h: h, start: time.Now(), deadline: deadline}
	if i := h.t.inst; i != nil {
		i.held.Add(bg, 1, h.attrs)
		if h.leader {
			i.leader.Record(bg, 1, h.attrs)
			i.transitions.Add(bg, 1, h.attrs)
		}
	}
	if h.t.tracer != nil {
		if ctx == nil {
			ctx = bg
		}
		_, x.span = h.t.tracer.Start(ctx, "baton.hold")
		if x.span.IsRecording() {
			x.span.SetAttributes(h.span...)
			x.span.SetAttributes(attribute.Int64("baton.token", token))
		} else {
			x.span = nil
		}
	}
	if h.t.health != nil {
		h.t.health.add(x)
	}
	return x
}

// End records the end of the hold: end is an End constant; reason (a
// Reason constant) and err say why a lost or revoked hold ended.
func (x *Hold) End(end, reason string, err error) {
	if x == nil {
		return
	}
	if x.h.t.health != nil {
		x.h.t.health.remove(x)
	}
	if i := x.h.t.inst; i != nil {
		i.held.Add(bg, -1, x.h.attrs)
		i.hold.Record(bg, time.Since(x.start).Seconds(), x.h.with(KeyEnd, end))
		if end != EndReleased {
			i.lost.Add(bg, 1, x.h.with(KeyReason, reason))
		}
		if x.h.leader {
			i.leader.Record(bg, 0, x.h.attrs)
		}
	}
	if x.span != nil {
		if end != EndReleased {
			attrs := []attribute.KeyValue{attribute.String("baton.reason", reason)}
			if err != nil {
				attrs = append(attrs, attribute.String("baton.error", err.Error()))
			}
			x.span.AddEvent("baton.lost", trace.WithAttributes(attrs...))
		}
		x.span.SetAttributes(attribute.String("baton.end", end))
		x.span.End()
	}
}

// Candidate records that this candidate does not lead (yet), so that its
// baton.leader series exists at 0 while it campaigns. Leading is recorded
// by the hold of its leadership.
func (h *Handle) Candidate() {
	if h == nil || h.t.inst == nil {
		return
	}
	h.t.inst.leader.Record(bg, 0, h.attrs)
}

// QueueDepth records the number of items a queue listing found; an empty
// listing also sets the oldest item's age to 0.
func (h *Handle) QueueDepth(depth int) {
	if h == nil || h.t.inst == nil {
		return
	}
	h.t.inst.depth.Record(bg, int64(depth), h.attrs)
	if depth == 0 {
		h.t.inst.oldest.Record(bg, 0, h.attrs)
	}
}

// QueueOldest records the age of the item just taken: the oldest one
// available to this consumer.
func (h *Handle) QueueOldest(age time.Duration) {
	if h == nil || h.t.inst == nil {
		return
	}
	h.t.inst.oldest.Record(bg, age.Seconds(), h.attrs)
}

// Permits records a semaphore listing: permits held and free.
func (h *Handle) Permits(held, free int) {
	if h == nil || h.t.inst == nil {
		return
	}
	h.t.inst.permits.Record(bg, int64(held), h.with(KeyState, "held"))
	h.t.inst.permits.Record(bg, int64(free), h.with(KeyState, "free"))
}
