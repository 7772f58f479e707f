package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton"
)

// listen reads the session's notifications on its own connection, dialing
// it again when it breaks. A notification is "<watch id> <session that
// made the change>", or "ended" when the session was deleted. After a
// break every wait looks again, since notifications may have been lost.
func (c *conn) listen(lc *pgx.Conn) {
	defer c.bg.Done()
	for {
		for {
			n, err := lc.WaitForNotification(c.life)
			if err != nil {
				break
			}
			c.dispatch(n.Payload)
		}
		closeQuietly(lc)
		lc = nil
		for lc == nil {
			if c.life.Err() != nil {
				return
			}
			lc = c.redial()
			if lc == nil {
				select {
				case <-c.life.Done():
				case <-time.After(min(c.ttl/10, 100*time.Millisecond)):
				}
			}
		}
		c.wakeAll()
	}
}

// redial connects and listens again, or returns nil.
func (c *conn) redial() *pgx.Conn {
	ctx, cancel := context.WithTimeout(c.life, min(c.ttl/3, maxRenewInterval))
	defer cancel()
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
