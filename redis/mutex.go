package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

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
// the same request as the SET: pipelined after it when the lock was not
// contended when last taken on this Client, else in the acquire script.
//
// Fairness: a Lock that finds the lock taken joins K's line in the same
// script, and the release script hands the lock straight to the first
// live waiter in line: it sets K to that waiter's value with its ttl,
// draws its token, and publishes "<value> <token>" to that waiter alone,
// on the pub/sub channel of the waiter's Client, so the waiter holds
// without another round trip. So a releasing client cannot take the lock
// back while others wait. An uncontended cycle is two round trips and
// four commands, as many as redsync's (which gives no token): SET NX PX
// and INCR pipelined to acquire, and a script running one GETDEL to
// release. Waiters refresh
// their place every ttl/3, and an entry not refreshed for a ttl is
// skipped: a waiter that died does not block the line (but one that died
// after the lock was handed to it holds it until its ttl runs out).
// Waiters also look again when the holder's key expires, since a holder
// that crashed, or one that does not hand over (redsync), never
// publishes; a lock freed that way goes to whoever asks first, not to
// the head of the line.
//
// A Mutex value is one holder, as a baton.Mutex is: goroutines that share
// it take turns, Lock on a Mutex that holds (or whose lost hold was not yet
// given back by Unlock) waits for Unlock, and TryLock returns
// baton.ErrLocked. With the Reentrant option it counts instead: Lock on a
// Mutex that holds returns the same lease one level up, and only the last
// of as many Unlocks releases it. It must not be copied after first use.
type Mutex struct {
	lockHandle
	c *Client
}

// NewMutex returns a lock on the key named by key, a lock name as
// baton.CleanName has them: the key is the name as written, as redsync's
// ("jobs/x" and "/jobs/x" are two keys). It does no I/O.
func NewMutex(c *Client, key string, opts ...Option) *Mutex {
	m := &Mutex{c: c}
	m.init("redis", key, opts, m)
	if c != nil && c.shards != nil {
		m.k = clusterKeysFor(key)
		if m.bad == nil && m.replicas > 0 {
			// WAIT would have to reach the node that ran the script; a
			// pipeline on a Cluster sends it to any node.
			m.bad = fmt.Errorf("redis lock %s: WithReplicas is not supported on a Redis Cluster (%s)", key, c)
		}
	}
	return m
}

// giveBack deletes the key if it still holds h's value (with one GETDEL
// while the lease is live) and hands the lock to the next waiter, even if
// ctx is cancelled now (bounded by a couple of seconds; on Redis Cluster,
// by the lease's validity if longer).
func (m *Mutex) giveBack(ctx context.Context, h *liveLock, lost error) error {
	live := lost == nil && time.Now().Before(h.expiryTime())
	bound := cleanupTimeout
	if m.c.shards != nil && live {
		// On Redis Cluster a release may meet a failover (the slot has no
		// master until its replica is promoted): keep trying while the
		// key may still be ours, so that the lock is handed on when the
		// replica takes over instead of when the key expires.
		bound = max(bound, time.Until(h.expiryTime()))
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	ok, err := m.release(rctx, h.value, place{}, live)
	switch {
	case err != nil:
		return fmt.Errorf("redis: unlock %s: %w", m.k.lock, err)
	case !ok:
		return fmt.Errorf("%w: %s no longer held our value at unlock", baton.ErrLost, m.k.lock)
	}
	return nil
}

// take takes the lock with value: at once when it is free, else (unless
// try) in line, until a release hands it to us or the holder's key
// expires.
func (m *Mutex) take(ctx context.Context, value string, try bool) (*liveLock, error) {
	h, err := m.takeOnce(ctx, value, try)
	if try && errors.Is(err, ErrNotAcknowledged) {
		// Not held, as a lock taken: TryLock's failure says so.
		return nil, fmt.Errorf("%w: %w", baton.ErrLocked, err)
	}
	if m.replicas == 0 || try {
		return h, err
	}
	// WithReplicas: an acquisition the replicas did not acknowledge in
	// time was given back; ask again (with a new value: the old one may
	// linger where a give-back failed) until ctx ends.
	pause := time.NewTimer(0)
	<-pause.C
	defer pause.Stop()
	for errors.Is(err, ErrNotAcknowledged) {
		last := err
		pause.Reset(m.ttl / 20)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ctx.Err(), last)
		case <-pause.C:
		}
		h, err = m.takeOnce(ctx, newValue(m.ident, m.ttl), try)
		if err != nil && err == ctx.Err() {
			// Ended in the middle of an attempt: say why it lasted.
			return nil, fmt.Errorf("%w: %w", err, last)
		}
	}
	return h, err
}

// takeOnce is take, failing with an error wrapping ErrNotAcknowledged
// when WithReplicas's replicas did not acknowledge the acquisition.
func (m *Mutex) takeOnce(ctx context.Context, value string, try bool) (*liveLock, error) {
	if try || !m.c.waited.has(m.k.lock) {
		// Not contended when last taken here: try a plain SET NX PX with
		// the token's INCR first, and join the line only if taken.
		if h, done, err := m.takeFree(ctx, value, try); done {
			return h, err
		}
	}
	return m.waitInLine(ctx, value)
}

// takeFree takes the lock if it is free, with one SET NX PX and the
// token's INCR, pipelined. It reports done false when Lock is to wait in
// line: the lock is taken, or was lost while the restart guard held it
// back. A Lock subscribes the Client's channel meanwhile (once per
// Client), so that joining the line waits for no further round trip.
func (m *Mutex) takeFree(ctx context.Context, value string, try bool) (h *liveLock, done bool, err error) {
	if !try {
		m.c.hubFor(m.k.lock).prime(ctx)
	}
	var g grant
	if m.c.shards != nil {
		// On Redis Cluster the token is drawn by the script (see
		// release.lua's draw), in the same one round trip.
		g, err = runAcquire(ctx, m.c, m.k, value, m.ttl, modeTry, true, place{})
	} else {
		g, err = m.quick(ctx, value)
	}
	switch {
	case err != nil:
		return nil, true, m.giveUp(ctx, value, place{}, err)
	case g.ok && try && !m.c.srv.trusted(m.ttl):
		return nil, true, m.guarded(ctx, value)
	case g.ok:
		h, err := m.settled(ctx, value, g)
		return h, h != nil || err != nil, err
	case try:
		return nil, true, fmt.Errorf("%w: %s", baton.ErrLocked, m.k.lock)
	}
	return nil, false, nil
}

// waitInLine takes the lock in its line: each attempt takes it if it is
// free, or joins the line (refreshes our place in it); between attempts
// we wait for a release to hand it to us, for our place to need a
// refresh, or for the holder's key to expire.
func (m *Mutex) waitInLine(ctx context.Context, value string) (*liveLock, error) {
	// Listen before joining the line: a grant published after we join is
	// then never missed. This is no I/O once the Client's one pub/sub
	// channel is subscribed.
	l, err := m.c.hubFor(m.k.lock).listen(ctx, value)
	if err != nil {
		return nil, m.giveUp(ctx, value, place{}, err)
	}
	defer l.Close()
	var at place
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	for first := true; ; first = false {
		g, err := m.attempt(ctx, value, true, at)
		if err != nil {
			return nil, m.giveUp(ctx, value, at, err)
		}
		if g.ok {
			m.c.waited.set(m.k.lock, !first)
			if h, err := m.settled(ctx, value, g); h != nil || err != nil {
				return h, err
			}
			at = place{} // lost while the restart guard held it back: rejoin
			continue
		}
		at = g.at
		timer.Reset(m.lookAgain(g))
		select {
		case msg := <-l.C:
			if !timer.Stop() {
				<-timer.C
			}
			// The releasing client made us the holder in its script, for
			// the entry our last attempt left: the key was set after that
			// attempt reached the server, so validity counts from its send
			// time.
			if tok, ok := grantFor(msg, at.entry); ok {
				m.c.waited.set(m.k.lock, true)
				hg := grant{ok: true, token: tok, pttl: m.ttl, sent: g.sent}
				if m.replicas > 0 {
					var mine bool
					if hg, mine, err = m.confirmHandoff(ctx, value, tok); err != nil {
						return nil, m.giveUp(ctx, value, place{}, err)
					}
					if !mine {
						at = place{}
						continue
					}
				}
				if h, err := m.settled(ctx, value, hg); h != nil || err != nil {
					return h, err
				}
				at = place{} // popped by the hand-off
			}
		case <-timer.C:
		case <-ctx.Done():
			return nil, m.giveUp(ctx, value, at, ctx.Err())
		}
	}
}

// lookAgain is how long a waiter that attempt g put in line waits for a
// hand-off before it looks again: when its entry needs a refresh, or
// sooner when the holder's key expires (a holder that crashed, or one
// that does not hand over, like redsync).
func (m *Mutex) lookAgain(g grant) time.Duration {
	wait := m.ttl / 3
	if g.pttl >= 0 && g.pttl < wait {
		wait = max(g.pttl, time.Millisecond)
	}
	return wait
}

// settled is settle for take: the hold once the restart guard trusts the
// server, nil and no error when the key was lost meanwhile (wait in line
// again), or the error once we gave up.
func (m *Mutex) settled(ctx context.Context, value string, g grant) (*liveLock, error) {
	h, err := m.settle(ctx, value, g)
	if err != nil {
		return nil, m.giveUp(ctx, value, place{}, err)
	}
	return h, nil
}

// grantFor parses a hand-off message "<entry> <token>" and reports
// whether it is for entry.
func grantFor(msg, entry string) (int64, bool) {
	e, tok, ok := strings.Cut(msg, " ")
	if !ok || e != entry || entry == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(tok, 10, 64)
	return n, err == nil
}

// place is a waiter's entry in a line and its ticket.
type place struct {
	entry, ticket string
	// sweep asks the script to also leave every other entry of ours at
	// ticket: a Redlock round whose reply was lost may have left one that
	// entry does not name.
	sweep bool
}

// grant is the outcome of one acquire script run.
type grant struct {
	ok    bool
	token int64
	pttl  time.Duration // ok: validity left; else how long the lock may stay taken (<0: unknown)
	at    place         // in line: our entry
	sent  time.Time
}

// waitLife is how long a waiter's entry in a line lives without a
// refresh: a waiter refreshes it every ttl/3, so a waiter that died is
// skipped by releases after at most this long.
func waitLife(ttl time.Duration) time.Duration { return ttl }

// Modes of the acquire script: only try; join the line when the lock is
// taken; join it also when the lock is free but others are ahead (Redlock).
const (
	modeTry  = "t"
	modeWait = "w"
	modeFair = "f"
)

func runAcquire(ctx context.Context, c *Client, k keys, value string, ttl time.Duration, mode string, token bool, at place) (grant, error) {
	return runAcquireAck(ctx, c, k, value, ttl, mode, token, at, 0)
}

// runAcquireAck is runAcquire, with a WAIT for n replicas after the script
// when n > 0: a grant they did not acknowledge fails with an error
// wrapping ErrNotAcknowledged (the caller gives it back); a wait in line
// needs no acknowledgement.
func runAcquireAck(ctx context.Context, c *Client, k keys, value string, ttl time.Duration, mode string, token bool, at place, replicas int) (grant, error) {
	tok := "0"
	switch {
	case token && c.shards != nil:
		tok = "c" // tokens never below the server time: see release.lua
	case token:
		tok = "1"
	}
	sweep := ""
	if at.sweep {
		sweep = "1"
	}
	g := grant{sent: time.Now()}
	cmd, ackErr := c.evalAck(ctx, replicas, ttl, acquireScript, k.all(),
		value, ttl.Milliseconds(), mode, tok, at.entry, at.ticket, c.hubFor(k.lock).name, waitLife(ttl).Milliseconds(), sweep)
	res, err := cmd.Slice()
	if err != nil {
		return g, err
	}
	if len(res) < 2 {
		return g, fmt.Errorf("redis: acquire script returned %v", res)
	}
	ok, _ := res[0].(int64)
	n, _ := res[1].(int64)
	if ok == 1 {
		if len(res) < 3 {
			return g, fmt.Errorf("redis: acquire script returned %v", res)
		}
		p, _ := res[2].(int64)
		if ackErr != nil {
			return g, ackErr
		}
		g.ok, g.token, g.pttl = true, n, time.Duration(p)*time.Millisecond
		return g, nil
	}
	g.pttl = time.Duration(n) * time.Millisecond
	if len(res) == 4 {
		g.at.entry, _ = res[2].(string)
		g.at.ticket, _ = res[3].(string)
	}
	return g, nil
}

func (m *Mutex) attempt(ctx context.Context, value string, wait bool, at place) (grant, error) {
	mode := modeTry
	if wait {
		mode = modeWait
	}
	return runAcquireAck(ctx, m.c, m.k, value, m.ttl, mode, true, at, m.replicas)
}

// tokenFloor is the least token of a seeded counter: below it, the
// counter was missing (see seed.lua).
const tokenFloor = 1_000_000_000_000_000

// errLate is why a grant is given back when its reply came after its
// validity.
var errLate = errors.New("the grant's reply came after its validity")

// quick takes the lock if it is free with SET NX PX and draws the fencing
// token with INCR, both in one pipelined request and no script: the
// server runs the two back to back, so nobody else can take the lock
// between them unless the key expires there, and then the reply comes
// after the grant's validity, which quick checks. A failed SET's INCR only
// skips a token. A counter found missing is seeded by one more script.
func (m *Mutex) quick(ctx context.Context, value string) (grant, error) {
	g := grant{sent: time.Now(), pttl: -1}
	var set *goredis.BoolCmd
	var incr *goredis.IntCmd
	var wait *goredis.Cmd
	_, err := m.c.rc.Pipelined(ctx, func(p goredis.Pipeliner) error {
		set = p.SetNX(ctx, m.k.lock, value, m.ttl)
		incr = p.Incr(ctx, m.k.token)
		if m.replicas > 0 {
			wait = waitCmd(ctx, p, m.replicas, m.ttl)
		}
		return nil
	})
	if err != nil || !set.Val() {
		return g, MapError(err)
	}
	if wait != nil {
		if err := acked(wait, m.replicas, ackTimeout(m.ttl)); err != nil {
			return g, err
		}
	}
	tok := incr.Val()
	if tok < tokenFloor {
		cmd, err := m.c.evalAck(ctx, m.replicas, m.ttl, seedScript, []string{m.k.token})
		if err == nil {
			tok, err = cmd.Int64()
		}
		if err != nil {
			if refused(err) {
				// Scripts are refused to us, so the release script that
				// gives the lock back would be too: delete it here.
				m.c.deleteIf(ctx, m.k.lock, value)
			}
			return g, err
		}
	}
	if !time.Now().Before(g.sent.Add(m.ttl - lossMargin(m.ttl))) {
		return g, errLate
	}
	g.ok, g.token, g.pttl = true, tok, m.ttl
	return g, nil
}

func (m *Mutex) held(value string, g grant) *liveLock {
	deadline := g.sent.Add(min(g.pttl, m.ttl) - lossMargin(m.ttl))
	return newLiveLock(m.k.lock, g.token, value, m.ttl, deadline, func(ctx context.Context) (time.Time, error) {
		sent := time.Now()
		cmd, err := m.c.evalAck(ctx, m.replicas, m.ttl, extendScript, []string{m.k.lock}, value, m.ttl.Milliseconds())
		n, _ := cmd.Int64()
		if refused(err) {
			// Retrying cannot help: the hold ends now, before its validity
			// runs out, rather than later for no better reason.
			return time.Time{}, fmt.Errorf("%w: %s: the renewal was refused: %w", baton.ErrLost, m.k.lock, err)
		}
		if cmd.Err() == nil && n != 1 {
			// Whatever the replicas say: the key is not ours.
			return time.Time{}, fmt.Errorf("%w: %s no longer holds our value", baton.ErrLost, m.k.lock)
		}
		if err != nil {
			return time.Time{}, err // an unacknowledged renewal is retried
		}
		return sent.Add(m.ttl - lossMargin(m.ttl)), nil
	})
}

// release releases the lock if it holds value, leaving our place at in
// the line, and hands it on. With live (our lease is live, so the key
// holds our value) the script deletes the key with one GETDEL.
func (m *Mutex) release(ctx context.Context, value string, at place, live bool) (bool, error) {
	args := []any{value, at.entry, "1"}
	if m.c.shards != nil {
		args = []any{value, at.entry, "c", "c"} // see release.lua
	} else if live {
		args = append(args, "d", m.ttl.Milliseconds())
	}
	n, err := m.c.eval(ctx, releaseScript, m.k.all(), args...).Int64()
	return n == 1, err
}

// giveUp leaves the line (and hands the lock on should a grant have
// reached us unseen), then returns ctx's error if it ended, else err.
func (m *Mutex) giveUp(ctx context.Context, value string, at place, err error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = m.release(cctx, value, at, false)
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		// A read that timed out at ctx's deadline (go-redis sets it as
		// the socket's) can fail just before ctx's own timer ends ctx.
		<-ctx.Done()
	}
	if ctx.Err() != nil {
		if errors.Is(err, ErrRestartGuard) && errors.Is(err, ctx.Err()) {
			return err // says why the wait lasted: guardEnded
		}
		return ctx.Err()
	}
	if errors.Is(err, errClosed) {
		return err
	}
	return fmt.Errorf("redis: lock %s: %w", m.k.lock, err)
}

var _ baton.Locker = (*Mutex)(nil)
