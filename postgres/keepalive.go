package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton"
)

// maxRenewInterval caps the time between two renewals.
const maxRenewInterval = time.Second

// keepAlive renews the session every TTL/3 (at most a second apart) and
// ends it when the server says it is gone (ErrSessionExpired) or when no
// renewal has been confirmed in time (ErrSessionLost).
//
// The server sets the expiry to its clock at the renewal plus the TTL,
// and it renews no earlier than the client sent the request; so counting
// from the send time of the last confirmed renewal, minus a margin for
// clock rate and scheduling, the client learns of a loss before any other
// client can see the session expired (the etcd backend's rule).
func (c *conn) keepAlive(sent time.Time) {
	defer c.bg.Done()
	interval := min(c.ttl/3, maxRenewInterval)
	retry := interval / 4
	deadline := sent.Add(c.ttl - margin(c.ttl))
	next := sent.Add(interval)
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	var rc *pgx.Conn // the renewals' own connection, never queued behind the session's queries
	defer func() {
		if rc != nil {
			closeQuietly(rc)
		}
	}()
	for {
		select {
		case <-c.life.Done():
			return
		case <-timer.C:
		}
		if !time.Now().Before(deadline) {
			c.lost()
			return
		}
		t := time.Now()
		ok, err := c.renewOnce(&rc, deadline)
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
			next = time.Now().Add(retry)
			if next.After(deadline) {
				next = deadline
			}
		}
		timer.Reset(time.Until(next))
	}
}

// renewOnce renews the session once on *rc, dialing it first if need be,
// and gives up at the loss deadline: a slow reply is still a renewal
// (counted from when it was sent), and a connection given up on is closed
// (its state unknown), so the next renewal would have to dial again.
func (c *conn) renewOnce(rc **pgx.Conn, deadline time.Time) (bool, error) {
	ctx, cancel := context.WithDeadline(c.life, deadline)
	defer cancel()
	if *rc == nil {
		conn, err := pgx.ConnectConfig(ctx, c.lcfg.Copy())
		if err != nil {
			return false, err
		}
		*rc = conn
	}
	var ok bool
	err := (*rc).QueryRow(ctx, c.q.renew, c.id).Scan(&ok)
	if err != nil {
		closeQuietly(*rc)
		*rc = nil
	}
	return ok, err
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
