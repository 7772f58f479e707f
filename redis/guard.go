package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton"
)

// ErrRestartGuard is wrapped by the errors that say the restart guard
// holds locks back: a server (or enough Redlock masters) restarted less
// than a ttl ago, or has been up for less than a ttl, and may have lost
// keys that a holder still relies on. See Client.RestartGuard.
var ErrRestartGuard = errors.New("redis: restart guard")

// RestartGuard returns nil when the restart guard lets locks of the given
// ttl be granted on c's server now, else an error wrapping
// ErrRestartGuard that says why and for how long ("redis://h:p restarted
// 0.2s ago (run_id changed); locks on it wait until a TTL (6s) has
// passed: 5.8s left"). It does no I/O: it reports what c's connections
// read when they were made (nil before any).
//
// The guard: a server whose run_id changed, or that has been up for less
// than a ttl, may have restarted without persistence and lost the key of
// a holder that still believes it holds (its lease ends at most a ttl
// after its last renewal). A Mutex granted the lock there keeps the key
// but does not hold until a ttl has passed since the restart; a Redlock
// does not count such a master toward its quorum. A restart so costs a
// ttl of waiting instead of two holders at once.
func (c *Client) RestartGuard(ttl time.Duration) error {
	if note := c.srv.guardNote(c.url, ttl); note != "" {
		return fmt.Errorf("%w: %s", ErrRestartGuard, note)
	}
	return nil
}

// RestartGuard returns nil unless the restart guard is why locks of the
// given ttl cannot get a majority now: the masters it trusts are fewer
// than a majority, and would not be without it. The error wraps
// ErrRestartGuard and names each master it keeps out of the vote. It does
// no I/O.
func (q *Quorum) RestartGuard(ttl time.Duration) error {
	notes, trusted := q.guardNotes(ttl)
	if len(notes) == 0 || trusted >= q.majority() || trusted+len(notes) < q.majority() {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrRestartGuard, quorumNote(notes, len(q.nodes)))
}

// quorumNote says which of n masters the restart guard keeps out of the
// vote.
func quorumNote(notes []string, n int) string {
	return fmt.Sprintf("%d of %d masters do not count toward a quorum yet: %s", len(notes), n, strings.Join(notes, "; "))
}

// guardNotes says which masters the restart guard keeps out of the vote
// for locks of ttl, and how many it trusts.
func (q *Quorum) guardNotes(ttl time.Duration) (notes []string, trusted int) {
	for _, n := range q.nodes {
		if note := n.c.srv.guardNote("master "+n.c.url, ttl); note != "" {
			notes = append(notes, note)
		} else if n.c.srv.trusted(ttl) {
			trusted++
		}
	}
	return notes, trusted
}

// guardEnded is the error of a wait whose ctx ended (cause) while the
// restart guard held the lock back (held, from RestartGuard; nil if it no
// longer did): it wraps both, so that the caller learns why it waited.
func guardEnded(cause, held error) error {
	if held == nil {
		return cause
	}
	return fmt.Errorf("%w: %w", cause, held)
}

// readServer reads the server's run_id when no connection hook has: for
// a client NewClient could not hook, or one whose connections predate
// the hook. Once known, the hook keeps it current at no cost.
func (c *Client) readServer(ctx context.Context) error {
	if c.srv.hooked && c.srv.known() {
		return nil
	}
	info, err := c.info(ctx)
	if err != nil {
		return err
	}
	c.srv.saw(parseInfo(info))
	return nil
}

// guarded gives back a grant TryLock got from a server the restart guard
// does not trust yet, and says why it is not held.
func (m *Mutex) guarded(ctx context.Context, value string) error {
	held := m.c.RestartGuard(m.ttl)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = m.release(rctx, value, place{}, true)
	if held == nil { // lifted meanwhile
		held = fmt.Errorf("%w: %s restarted less than a TTL ago", ErrRestartGuard, m.c)
	}
	return fmt.Errorf("%w: %s: %w", baton.ErrLocked, m.k.lock, held)
}

// settle makes a grant the lease once the restart guard trusts the server.
// Until then it keeps the key without holding, renewing it every ttl/3,
// and the lease's validity counts from the renewal that confirmed the key
// ours after the guard lifted. It returns nil and no error when the key
// was lost meanwhile (the server restarted again): the caller waits in
// line again. It also keeps the Client's tokens on the key increasing
// (see floors).
func (m *Mutex) settle(ctx context.Context, value string, g grant) (*liveLock, error) {
	if !m.c.srv.hooked && !m.c.srv.cluster {
		// No hook saw the connection that granted: ask now, after the
		// grant, so that a restart before it is seen.
		if err := m.c.readServer(ctx); err != nil {
			return nil, err
		}
	}
	var timer *time.Timer
	for !m.c.srv.trusted(m.ttl) {
		held := m.c.RestartGuard(m.ttl)
		wait := min(max(m.c.srv.guard(m.ttl).left, time.Millisecond), m.ttl/3)
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return nil, guardEnded(ctx.Err(), held)
		case <-timer.C:
		}
		sent := time.Now()
		cmd, err := m.c.evalAck(ctx, m.replicas, m.ttl, extendScript, []string{m.k.lock}, value, m.ttl.Milliseconds())
		n, _ := cmd.Int64()
		if err != nil {
			if ctx.Err() != nil {
				return nil, guardEnded(ctx.Err(), held)
			}
			return nil, err
		}
		if n != 1 {
			return nil, nil
		}
		g.sent, g.pttl = sent, m.ttl
	}
	if floor := m.c.floors.get(m.k.lock); g.token <= floor {
		cmd, err := m.c.evalAck(ctx, m.replicas, m.ttl, seedScript, []string{m.k.token}, floor)
		if err != nil {
			return nil, err
		}
		tok, err := cmd.Int64()
		if err != nil {
			return nil, err
		}
		g.token = tok
	}
	m.c.floors.raise(m.k.lock, g.token)
	return m.held(value, g), nil
}
