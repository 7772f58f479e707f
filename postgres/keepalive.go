package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton"
)

// maxRenewInterval caps the time between two renewals.
const maxRenewInterval = time.Second

// run is the session's own connection: it reads the session's
// notifications, and between them renews the session every TTL/3 (at most
// a second apart), so that one connection per session, never queued
// behind the session's queries, carries both. It ends the session when the
// server says it is gone (ErrSessionExpired) or when no renewal has been
// confirmed in time (ErrSessionLost), and dials the connection again when
// it breaks, after which every wait looks again (notifications may have
// been lost).
//
// The server sets the expiry to its clock at the renewal plus the TTL,
// and it renews no earlier than the client sent the request; so counting
// from the send time of the last confirmed renewal, minus a margin for
// clock rate and scheduling, the client learns of a loss before any other
// client can see the session expired (the etcd backend's rule).
func (c *conn) run(lc *pgx.Conn, sent time.Time) {
	defer c.bg.Done()
	defer func() {
		if lc != nil {
			closeQuietly(lc)
		}
	}()
	interval := min(c.ttl/3, maxRenewInterval)
	retry := interval / 4
	deadline := sent.Add(c.ttl - margin(c.ttl))
	next := sent.Add(interval)
	for {
		if c.life.Err() != nil {
			return
		}
		if !time.Now().Before(deadline) {
			c.lost()
			return
		}
		if lc == nil {
			if lc = c.redial(deadline); lc == nil {
				c.sleep(min(retry, time.Until(deadline)))
				continue
			}
			c.wakeAll()
		}
		if d := time.Until(next); d > 0 {
			wctx, cancel := context.WithTimeout(c.life, d)
			n, err := lc.WaitForNotification(wctx)
			cancel()
			switch {
			case err == nil:
				c.dispatch(n.Payload)
			case c.life.Err() != nil:
				return
			case !lc.IsClosed() && (errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)):
				// Time to renew.
			default:
				closeQuietly(lc)
				lc = nil
			}
			continue
		}
		t := time.Now()
		ok, err := c.renew(lc, deadline)
		switch {
		case c.life.Err() != nil:
			return
		case err == nil && ok:
			c.Renewed(time.Until(deadline))
			deadline = t.Add(c.ttl - margin(c.ttl))
			c.expiry.set(deadline)
			next = t.Add(interval)
		case err == nil:
			c.end(baton.ErrSessionExpired)
			return
		default:
			closeQuietly(lc)
			lc = nil
			next = time.Now().Add(retry)
		}
	}
}

// renew renews the session once on lc, giving up at the loss deadline
// only: a slow reply is still a renewal, counted from when it was sent.
func (c *conn) renew(lc *pgx.Conn, deadline time.Time) (bool, error) {
	ctx, cancel := context.WithDeadline(c.life, deadline)
	defer cancel()
	var ok bool
	err := lc.QueryRow(ctx, c.q.renew, c.id).Scan(&ok)
	return ok, err
}

// sleep waits d or until the session ends.
func (c *conn) sleep(d time.Duration) {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.life.Done():
	}
}

// lost ends a session given up locally and tries once, briefly, to delete
// it, so that its nodes go now rather than a TTL later.
func (c *conn) lost() {
	c.end(baton.ErrSessionLost)
	ctx, cancel := context.WithTimeout(context.Background(), min(c.ttl/3, maxRenewInterval))
	defer cancel()
	_, _ = c.pool.Exec(ctx, c.q.end, c.id)
}

// closeTimeout bounds closing a connection: a polite Terminate to a server
// that may not answer (cut off, frozen).
const closeTimeout = time.Second

// closeQuietly closes c, waiting at most closeTimeout.
func closeQuietly(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = c.Close(ctx)
}
