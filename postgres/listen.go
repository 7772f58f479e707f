package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton"
)

// redial connects and listens again, giving up at the loss deadline or
// after a renewal interval, or returns nil.
func (c *conn) redial(deadline time.Time) *pgx.Conn {
	ctx, cancel := context.WithDeadline(c.life, deadline)
	defer cancel()
	ctx, cancel2 := context.WithTimeout(ctx, min(c.ttl/3, maxRenewInterval))
	defer cancel2()
	lc, err := pgx.ConnectConfig(ctx, c.lcfg.Copy())
	if err != nil {
		return nil
	}
	if _, err := lc.Exec(ctx, "LISTEN "+pgx.Identifier{c.q.channel(c.id)}.Sanitize()); err != nil {
		closeQuietly(lc)
		return nil
	}
	return lc
}

// dispatch handles one notification: "<watch id> <session that made the
// change>", or "ended" when the session was deleted.
func (c *conn) dispatch(payload string) {
	if payload == "ended" {
		c.end(baton.ErrSessionExpired) // after Close, ErrClosed came first
		return
	}
	ws, by, _ := strings.Cut(payload, " ")
	wid, err := strconv.ParseInt(ws, 10, 64)
	if err != nil {
		return
	}
	c.waitMu.Lock()
	ch := c.waits[wid]
	delete(c.waits, wid)
	c.waitMu.Unlock()
	if ch == nil {
		return
	}
	if by != c.by {
		c.events.Add(1)
	}
	close(ch)
}

// wakeAll wakes every wait to look again.
func (c *conn) wakeAll() {
	c.wakeMu.Lock()
	close(c.wake)
	c.wake = make(chan struct{})
	c.wakeMu.Unlock()
}

func (c *conn) wakeChan() <-chan struct{} {
	c.wakeMu.Lock()
	defer c.wakeMu.Unlock()
	return c.wake
}
