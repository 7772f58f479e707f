package baton

import (
	"context"
	"sync"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/handle"
	"github.com/batonhq/baton/internal/telemetry"
)

// DefaultTTL is the session timeout used when none is given.
const DefaultTTL = 10 * time.Second

// Session is one client session on a coordination store. Every recipe is
// built on a Session; ephemeral nodes it creates (lock contenders, election
// candidates, leases) live exactly as long as it does.
//
// A Session is lost when the server expires it, or as soon as no contact
// with the store has been confirmed for its TTL minus a safety margin, so
// the client always learns of a loss before the server can hand its locks to
// someone else. Done is closed then and Err says why.
type Session struct {
	conn  backend.Conn
	ident Identity     // written into the recipes' nodes
	tel   *telemetry.T // nil: no telemetry
}

// NewSession wraps a backend's connection, as database/sql's OpenDB wraps
// a driver.Connector: it is how a backend's Open (zk.Open, etcd.Open,
// memory's Store.Open) makes the Session it returns, and how a backend of
// one's own (package backend) makes one. It does no I/O. The session and
// its recipes report metrics and spans to t (the zero Telemetry: none),
// which is what a backend's WithTelemetry option gives it. Its recipes
// write DefaultIdentity into their nodes; see WithIdentity.
func NewSession(c backend.Conn, t Telemetry) *Session {
	return &Session{conn: c, ident: DefaultIdentity(), tel: newTelemetry(c, t)}
}

// Conn returns the backend connection under the session: the store
// primitives of package backend, for a backend's own tools and tests. The
// recipes need nothing from it.
func (s *Session) Conn() backend.Conn { return s.conn }

// ID is the session's id as the store shows it.
func (s *Session) ID() string { return s.conn.ID() }

// TTL is the session timeout in force.
func (s *Session) TTL() time.Duration { return s.conn.TTL() }

// Done is closed when the session is over.
func (s *Session) Done() <-chan struct{} { return s.conn.Done() }

// Err is nil while the session is live, then ErrSessionExpired,
// ErrSessionLost or ErrClosed (possibly wrapped).
func (s *Session) Err() error { return s.conn.Err() }

// Close ends the session and releases everything it holds.
func (s *Session) Close(ctx context.Context) error { return s.conn.Close(ctx) }

// deadline is the session's local deadline, or zero if the backend does
// not say.
func (s *Session) deadline() time.Time {
	if e, ok := s.conn.(backend.Expirer); ok {
		return e.Expiry()
	}
	return time.Time{}
}

// newLease makes the lease of an acquisition on this session, reporting
// its hold to h (nil: none): the hold starts now and ends with the lease,
// just after Done closes.
func (s *Session) newLease(h *telemetry.Handle, a *telemetry.Acquire, key string, token int64) (*Lease, func(error)) {
	hl, end := handle.NewLease(key, token)
	if e, ok := s.conn.(backend.Expirer); ok {
		// The session's deadline is every lease's on it: a lease is lost
		// when its session is.
		handle.SetDeadline(hl, e.Expiry, handle.DefaultGrace(s.TTL()))
	}
	l := leaseOf(hl)
	if h == nil {
		return l, end
	}
	return l, reportEnd(l, end, h.StartHold(a.Parent(), token, s.deadline))
}

// reportEnd returns end, which ends l, followed by the end of x once, as
// l's error says.
func reportEnd(l *Lease, end func(error), x *telemetry.Hold) func(error) {
	var once sync.Once
	return func(err error) {
		end(err)
		once.Do(func() {
			e, r := endOf(l.Err())
			x.End(e, r, l.Err())
		})
	}
}
