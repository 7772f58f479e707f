package etcd

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/batonhq/baton"
)

// maxKeepAliveInterval caps the time between two renewals.
const maxKeepAliveInterval = time.Second

// keepAlive renews the lease every TTL/3 (at most a second apart) and ends the session when the
// server says the lease is gone (ErrSessionExpired) or when no renewal has
// been acknowledged in time (ErrSessionLost).
//
// The server may expire the lease TTL after it last renewed it, and it
// renewed it no earlier than we sent the request; so counting from the
// send time of the last acknowledged keepalive, minus a margin for clock
// rate and scheduling, we always learn of a loss before the server can
// give our keys away. That is why this loop uses KeepAliveOnce rather than
// the client's KeepAlive stream, which does not say when a renewal was
// sent.
func (c *conn) keepAlive(sent time.Time) {
	defer close(c.kaDone)
	margin := c.ttl / 10 // Open sets the first Expiry with the same margin
	// At most a second apart, so that a lease revoked or expired on the
	// server is noticed within a second whatever the TTL (a waiter on a
	// dead session returns promptly: cf. etcd #19597).
	interval := min(c.ttl/3, maxKeepAliveInterval)
	retry := interval / 4
	deadline := sent.Add(c.ttl - margin)
	next := sent.Add(interval)
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	for {
		select {
		case <-c.life.Done():
			return
		case <-timer.C:
		}
		if !time.Now().Before(deadline) {
			c.end(baton.ErrSessionLost)
			c.revokeLost()
			return
		}
		t := time.Now()
		expired, err := c.keepAliveOnce(deadline, t.Add(interval))
		if expired {
			c.end(baton.ErrSessionLost)
			c.revokeLost()
			return
		}
		switch {
		case err == nil:
			if c.Reporting() {
				c.Renewed(time.Until(deadline))
			}
			deadline = t.Add(c.ttl - margin)
			c.expiry.set(deadline)
			next = t.Add(interval)
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			c.end(baton.ErrSessionExpired)
			return
		case c.life.Err() != nil:
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

// keepAliveOnce renews the lease once. It gives up at deadline, reporting
// expired, at that moment, however long the request would take to fail:
// the loss must be known before the server can give our keys away. The
// request itself gives up at giveUp (if earlier), an error the loop
// retries: on a cluster the client sends each request to the next member,
// and a member that hangs (frozen, cut off with its connections open)
// would otherwise hold the renewal until the deadline and lose a session
// the other members could have kept.
func (c *conn) keepAliveOnce(deadline, giveUp time.Time) (expired bool, err error) {
	ctx, cancel := context.WithDeadline(c.life, deadline)
	defer cancel()
	if giveUp.Before(deadline) {
		var cancel2 context.CancelFunc
		ctx, cancel2 = context.WithDeadline(ctx, giveUp)
		defer cancel2()
	}
	res := make(chan error, 1)
	go func() {
		_, err := c.cli.KeepAliveOnce(ctx, c.lease)
		res <- err
	}()
	lost := time.NewTimer(time.Until(deadline))
	defer lost.Stop()
	select {
	case err := <-res:
		return false, err
	case <-lost.C:
		return true, nil
	}
}

// revokeLost tries once, briefly, to revoke the lease of a session that
// was given up locally. The session is already over for us; if the server
// can still be reached, revoking frees our keys now instead of a TTL later,
// so the next waiter need not wait out a lease nobody renews.
//
// It gives up after one keepalive interval (at most a second), as a
// keepalive does: it is all Close waits for, and the server, if it could
// answer, would have; if not, the lease expires a TTL later as it would
// have anyway.
func (c *conn) revokeLost() {
	ctx, cancel := context.WithTimeout(context.Background(), min(c.ttl/3, maxKeepAliveInterval))
	defer cancel()
	_, _ = c.cli.Revoke(ctx, c.lease)
}
