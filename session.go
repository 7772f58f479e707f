package baton

import (
	"context"
	"time"
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
	conn  Conn
	ident Identity // written into the recipes' nodes
}

// NewSession wraps a backend connection. It does no I/O. Its recipes write
// DefaultIdentity into their nodes; see WithIdentity.
func NewSession(c Conn) *Session { return &Session{conn: c, ident: DefaultIdentity()} }

// Conn returns the backend connection under the session.
func (s *Session) Conn() Conn { return s.conn }

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
