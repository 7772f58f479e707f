package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton"
)

// cleanupTimeout bounds the release done after a cancelled or failed wait.
const cleanupTimeout = 2 * time.Second

// Mutex is an exclusive lock on one Redis server, with the same handle as
// baton.Mutex: Lock, TryLock and Unlock, a fencing token per acquisition,
// and a lease whose Done closes when the hold may have been lost.
//
// The lock is the string key K set with SET K value NX PX ttl and a random
// value, released by a compare-and-delete script and renewed every ttl/3
// by a compare-and-pexpire script, so redsync and bsm/redislock contend
// with it on the same key. The fencing token comes from INCR on K:token in
// the same script as the SET.
//
// Fairness: waiters line up in K:queue in arrival order, and a free lock
// goes only to the first of them, so no client gets the lock twice in a
// row while another waits. There is no polling: the release script hands
// the lock straight to the first live waiter (setting K to its value, with
// its ttl, and drawing its token) and publishes "<value> <token>" on
// K:release, so the hand-off costs the releaser's one round trip plus the
// message. A waiter also looks again when the holder's remaining ttl runs
// out (a holder that crashed, or one that does not publish, like redsync),
// and refreshes its place every ttl/3; a waiter that stops refreshing is
// dropped from the line after a ttl. A waiter's value is 32 hex digits, a
// dot and its ttl in milliseconds.
//
// A Mutex value is one holder, re-entrant like baton.Mutex. It must not be
// copied after first use.
type Mutex struct {
	c   *Client
	k   keys
	ttl time.Duration

	reentry
}

// NewMutex returns a lock on key, a plain Redis key name. It does no I/O.
func NewMutex(c *Client, key string, opts ...Option) *Mutex {
	o := buildOptions(opts)
	return &Mutex{c: c, k: keysFor(key), ttl: o.ttl, reentry: reentry{turn: make(chan struct{}, 1)}}
}

// Key is the lock's Redis key.
func (m *Mutex) Key() string { return m.k.lock }

// Lock acquires the lock, waiting in line for as long as ctx allows. The
// returned lease carries the fencing token and ends (Done closes, Err wraps
// baton.ErrLost) as soon as a renewal cannot be confirmed before the last
// confirmed validity runs out, that is before the key can expire on the
// server.
//
// If ctx ends first, our place in line is given up and ctx.Err() returned.
func (m *Mutex) Lock(ctx context.Context) (*baton.Lease, error) { return m.acquire(ctx, false) }

// TryLock acquires the lock only if it is free and nobody waits for it; it
// returns an error wrapping baton.ErrLocked otherwise.
func (m *Mutex) TryLock(ctx context.Context) (*baton.Lease, error) { return m.acquire(ctx, true) }

// Unlock releases one level of the lock; the last level deletes the key
// (only if it still holds our value) and wakes the next waiter. Unlock
// without a hold returns baton.ErrNotHeld; after a loss, an error wrapping
// baton.ErrLost. The release is sent even if ctx is already cancelled
// (bounded by a couple of seconds).
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.enter(ctx); err != nil {
		return err
	}
	defer m.leave()
	h, err := m.drop()
	if h == nil {
		return err
	}

	h.stopRenewal()
	lost := h.lease.Err()
	// The release must happen even if ctx is cancelled now.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	ok, err := m.release(rctx, h.value)
	h.end(baton.ErrNotHeld)
	h.wait()
	switch {
	case lost != nil:
		return lost
	case err != nil:
		return fmt.Errorf("redis: unlock %s: %w", m.k.lock, err)
	case !ok:
		return fmt.Errorf("%w: %s no longer held our value at unlock", baton.ErrLost, m.k.lock)
	}
	return nil
}

// Held reports whether this handle holds the lock (its lease is live).
func (m *Mutex) Held() bool {
	return m.live()
}

func (m *Mutex) acquire(ctx context.Context, try bool) (*baton.Lease, error) {
	if err := CheckKey(m.k.lock); err != nil {
		return nil, err
	}
	if err := m.enter(ctx); err != nil {
		return nil, err
	}
	defer m.leave()
	if l := m.again(); l != nil {
		return l, nil
	}

	// The value carries our ttl, so a releasing client can hand the lock
	// to us with our own ttl.
	value := randomValue() + "." + strconv.FormatInt(m.ttl.Milliseconds(), 10)
	g, err := m.attempt(ctx, value, !try)
	if err != nil {
		return nil, m.giveUp(ctx, value, err)
	}
	if g.ok {
		return m.held(value, g), nil
	}
	if try {
		return nil, fmt.Errorf("%w: %s", baton.ErrLocked, m.k.lock)
	}

	// We are in line. Listen for our turn, then look again: a release
	// between our first attempt and the subscription is seen by this one.
	l, err := m.c.hub.listen(ctx, m.k.channel, func(msg string) bool {
		return msg == "" || strings.HasPrefix(msg, value+" ")
	})
	if err != nil {
		return nil, m.giveUp(ctx, value, err)
	}
	defer l.Close()
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	for {
		g, err = m.attempt(ctx, value, true)
		if err != nil {
			return nil, m.giveUp(ctx, value, err)
		}
		if g.ok {
			return m.held(value, g), nil
		}
		wait := m.ttl / 3
		if g.hint >= 0 && g.hint < wait {
			wait = max(g.hint, time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case msg := <-l.C:
			// The releasing client granted us the lock in its script: the
			// key was set after our last attempt reached the server, so
			// validity counts from that attempt's send time.
			if tok, err := strconv.ParseInt(strings.TrimPrefix(msg, value+" "), 10, 64); err == nil && msg != "" {
				return m.held(value, grant{ok: true, token: tok, sent: g.sent}), nil
			}
		case <-timer.C:
		case <-ctx.Done():
			return nil, m.giveUp(ctx, value, ctx.Err())
		}
	}
}

// grant is the outcome of one acquire script run.
type grant struct {
	ok    bool
	token int64
	hint  time.Duration // when not ok: how long the lock may stay taken (<0: unknown)
	sent  time.Time
}

func (m *Mutex) attempt(ctx context.Context, value string, queue bool) (grant, error) {
	q := "0"
	if queue {
		q = "1"
	}
	ttl := m.ttl.Milliseconds()
	g := grant{sent: time.Now()}
	res, err := acquireScript.Run(ctx, m.c.rc,
		[]string{m.k.lock, m.k.token, m.k.queue, m.k.waiting},
		value, ttl, q, ttl).Int64Slice()
	if err != nil {
		return g, err
	}
	if len(res) != 2 {
		return g, fmt.Errorf("redis: acquire script returned %v", res)
	}
	if res[0] == 1 {
		g.ok, g.token = true, res[1]
	} else {
		g.hint = time.Duration(res[1]) * time.Millisecond
	}
	return g, nil
}

func (m *Mutex) held(value string, g grant) *baton.Lease {
	deadline := g.sent.Add(m.ttl - lossMargin(m.ttl))
	h := newHold(m.k.lock, g.token, value, m.ttl, deadline, func(ctx context.Context) (time.Time, error) {
		sent := time.Now()
		n, err := extendScript.Run(ctx, m.c.rc, []string{m.k.lock}, value, m.ttl.Milliseconds()).Int64()
		if err != nil {
			return time.Time{}, err
		}
		if n != 1 {
			return time.Time{}, fmt.Errorf("%w: %s no longer holds our value", baton.ErrLost, m.k.lock)
		}
		return sent.Add(m.ttl - lossMargin(m.ttl)), nil
	})
	return m.take(h)
}

func (m *Mutex) release(ctx context.Context, value string) (bool, error) {
	n, err := releaseScript.Run(ctx, m.c.rc, []string{m.k.lock, m.k.token, m.k.queue, m.k.waiting}, value, m.k.channel).Int64()
	return n == 1, err
}

// giveUp leaves the line (and deletes the key should our grant have landed
// unseen), then returns ctx's error if it ended, else err.
func (m *Mutex) giveUp(ctx context.Context, value string, err error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = m.release(cctx, value)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, errClosed) {
		return err
	}
	return fmt.Errorf("redis: lock %s: %w", m.k.lock, err)
}
