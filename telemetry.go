package baton

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/telemetry"
)

// Telemetry says where a session reports its metrics and spans through
// OpenTelemetry. The zero Telemetry reports nothing, and a session without
// it pays nothing measurable (docs/PERFORMANCE.md, "instrumentation").
//
// Every recipe reports the metrics listed in docs/OBSERVABILITY.md
// (baton.acquire.duration, baton.hold.duration, baton.waiting, baton.held,
// baton.lost, baton.session.renew.slack, baton.leader,
// baton.leader.transitions, baton.queue.depth, baton.queue.oldest_age,
// baton.semaphore.permits) with the attributes backend, recipe and name,
// and traces a span per acquire call ("baton.acquire": token, position in
// line, attempts) and per hold ("baton.hold", with a "baton.lost" event
// when the lease is lost).
type Telemetry struct {
	// MeterProvider receives the metrics; nil reports none.
	MeterProvider metric.MeterProvider
	// TracerProvider receives the spans; nil reports none.
	TracerProvider trace.TracerProvider
	// NameLabel maps a recipe's name to its name attribute, which keeps the
	// number of series bounded. nil means DefaultNameLabel. Return a
	// constant (or a small set of values) when names are made per request.
	NameLabel func(name string) string
	// Health, if set, learns of every lease held on the session, so that
	// it fails when one outlives its deadline (see NewHealth).
	Health *Health
}

// Health is a liveness check (an http.Handler) that fails when a lease
// this process believes it holds is past its deadline: see NewHealth.
type Health = telemetry.Health

// NewHealth returns a liveness check, in the style of client-go's
// leader-election watchdog, over the leases of the sessions (and Redis
// locks) given it through Telemetry.Health. It answers 200 while every
// lease still held is within its deadline plus tolerance, and 500 once one
// is not: the process has not noticed, within tolerance, that it may have
// lost a lease (it is stopped, starved or wedged), and its liveness probe
// should restart it. A lease's deadline is the moment its session would be
// given up locally unless renewed (ZooKeeper, etcd) or the end of the
// lock's validity (Redis); on the memory store, the TTL minus a margin
// after Partition cut the session off. Lease.Deadline is the same moment.
func NewHealth(tolerance time.Duration) *Health { return telemetry.NewHealth(tolerance) }

// DefaultNameLabel is the name attribute used when Telemetry.NameLabel is
// nil: name with its ids and sequence numbers replaced by "#". A token (a
// run of letters and digits) of hex digits only, with at least one decimal
// digit, is an id; in other tokens each run of decimal digits is replaced;
// ids joined by "-", "_" or "." (a UUID, a date) collapse into one "#".
// So "/jobs/2024-06-01/report" is "/jobs/#/report", "orders/5f2b9c1e-…"
// "orders/#" and "worker-17" "worker-#"; "nightly-report" stays as it is.
func DefaultNameLabel(name string) string { return telemetry.DefaultNameLabel(name) }

func newTelemetry(c backend.Conn, t Telemetry) *telemetry.T {
	kind := "unknown"
	if b, ok := c.(backend.Backender); ok {
		kind = b.Backend()
	}
	tel := telemetry.New(kind, telemetry.Config{
		MeterProvider:  t.MeterProvider,
		TracerProvider: t.TracerProvider,
		NameLabel:      t.NameLabel,
		Health:         t.Health,
	})
	if r, ok := c.(backend.Renewer); ok && tel != nil && t.MeterProvider != nil {
		tel.SessionTTL(c.TTL())
		r.OnRenew(tel.Renewed)
	}
	return tel
}

// Recipe names: the recipe attribute.
const (
	recipeMutex         = "mutex"
	recipeRead          = "rwmutex_read"
	recipeWrite         = "rwmutex_write"
	recipeSemaphore     = "semaphore"
	recipeElection      = telemetry.RecipeElection
	recipeQueue         = "queue"
	recipeReliableQueue = "reliable_queue"
	recipeBarrier       = telemetry.RecipeBarrier
	recipeDoubleBarrier = "double_barrier"
	recipeMultiLock     = "multilock"
	recipeSelector      = telemetry.RecipeLeaderSelector
)

// outcomeOf and endOf are the one mapping of errors to acquire outcomes
// and to the ends of holds, which the redis package's locks use too.
var (
	outcomeOf = telemetry.Outcome
	endOf     = telemetry.End
)

// sessionHold is a hold reported to telemetry that ends when told, or as
// lost when its session ends first (a recipe that does not watch a node of
// its own: DoubleBarrier).
type sessionHold struct {
	x    *telemetry.Hold
	once sync.Once
	stop chan struct{}
	done chan struct{} // closed once the watch has returned
}

// startSessionHold starts the hold of a lease with token on s reported to
// h, or returns nil when h is nil.
func startSessionHold(ctx context.Context, s *Session, h *telemetry.Handle, token int64) *sessionHold {
	if h == nil {
		return nil
	}
	x := &sessionHold{x: h.StartHold(ctx, token, s.deadline), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(x.done)
		select {
		case <-s.Done():
			x.end(fmt.Errorf("%w: %w", ErrLost, s.Err()))
		case <-x.stop:
		}
	}()
	return x
}

// end ends the hold, as err says (nil: released), once.
func (x *sessionHold) end(err error) {
	if x == nil {
		return
	}
	x.once.Do(func() {
		close(x.stop)
		e, r := endOf(err)
		x.x.End(e, r, err)
	})
}

// close ends the hold unless it ended already (released, or lost if the
// session is gone), and waits for its watch to return.
func (x *sessionHold) close(s *Session) {
	if x == nil {
		return
	}
	x.end(s.Err())
	<-x.done
}

func tokenOf(l *Lease) int64 {
	if l == nil {
		return 0
	}
	return l.Token()
}
