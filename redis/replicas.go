package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// ErrNotAcknowledged is wrapped by the error of an acquisition that
// WithReplicas made wait for replicas that did not acknowledge it in time:
// the lock was not held, and what was written was given back. A Lock
// retries until its ctx ends, then returns an error wrapping both ctx's
// error and ErrNotAcknowledged; TryLock fails at once with an error
// wrapping both baton.ErrLocked and ErrNotAcknowledged.
var ErrNotAcknowledged = errors.New("redis: not acknowledged by enough replicas")

// WithReplicas makes a Mutex count a write only once n replicas of its
// master have acknowledged it (WAIT n timeout, sent in the same request as
// the write, on the same connection): the acquisition with its fencing
// token, the hand-off to a waiter (which the new holder confirms with a
// renewal of its own and a WAIT, since WAIT covers only its own
// connection's writes), the raise of the token counter, and every
// renewal. An acquisition not acknowledged within the timeout (a fifth of
// the ttl, at most a second) is given back (compare-and-delete) and is
// not held; a renewal not acknowledged counts as a failed renewal, so the
// lease ends when the validity last acknowledged runs out. See the
// package doc ("Sentinel and replicas") for what this does and does not
// guarantee. n is at most the number of replicas the master has; 0 (the
// default) waits for none and sends no WAIT. Redlock refuses it.
func WithReplicas(n int) Option {
	return func(o *options) { o.replicas = n }
}

// ackTimeout is how long a WAIT waits for the replicas: a fifth of the
// ttl, and at most a second, within go-redis's default read timeout (3s)
// that bounds a pipelined request.
func ackTimeout(ttl time.Duration) time.Duration { return min(ttl/5, time.Second) }

// waitCmd queues WAIT n for the writes queued before it on p (go-redis's
// Pipeliner has no Wait).
func waitCmd(ctx context.Context, p goredis.Pipeliner, n int, ttl time.Duration) *goredis.Cmd {
	return p.Do(ctx, "wait", n, ackTimeout(ttl).Milliseconds())
}

// acked returns nil when WAIT's reply says n replicas acknowledged the
// connection's writes, else an error wrapping ErrNotAcknowledged.
func acked(w *goredis.Cmd, n int, timeout time.Duration) error {
	got, err := w.Int64()
	if err != nil {
		return MapError(err)
	}
	if got < int64(n) {
		return fmt.Errorf("%w: %d of %d replicas acknowledged within %v", ErrNotAcknowledged, got, n, timeout)
	}
	return nil
}

// evalAck runs one of this package's scripts and, with n > 0, a WAIT for n
// replicas after it on the same connection (one pipelined request). The
// returned Cmd carries the script's reply; the error is the script's, or
// else the acknowledgement's.
func (c *Client) evalAck(ctx context.Context, n int, ttl time.Duration, s *goredis.Script, keys []string, args ...any) (*goredis.Cmd, error) {
	if n <= 0 {
		cmd := c.eval(ctx, s, keys, args...)
		return cmd, cmd.Err()
	}
	timeout := ackTimeout(ttl)
	run := func(sha bool) (*goredis.Cmd, *goredis.Cmd) {
		var cmd *goredis.Cmd
		var w *goredis.Cmd
		_, _ = c.rc.Pipelined(ctx, func(p goredis.Pipeliner) error {
			if sha {
				cmd = s.EvalSha(ctx, p, keys, args...)
			} else {
				cmd = s.Eval(ctx, p, keys, args...)
			}
			w = waitCmd(ctx, p, n, ttl)
			return nil
		})
		return cmd, w
	}
	cmd, w := run(true)
	if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		cmd, w = run(false)
	}
	cmd.SetErr(MapError(cmd.Err()))
	if err := cmd.Err(); err != nil {
		return cmd, err
	}
	return cmd, acked(w, n, timeout)
}

// confirmHandoff makes a hand-off count under WithReplicas: the releasing
// client granted us the lock in its script, on its connection, whose
// writes our WAIT does not cover. So we renew the key (a write of ours,
// after the grant in the replication stream) and WAIT for it: once n
// replicas have it, they have the grant and its token too. It returns the
// grant counted from the renewal, ok false when the key is no longer ours.
func (m *Mutex) confirmHandoff(ctx context.Context, value string, tok int64) (grant, bool, error) {
	g := grant{sent: time.Now()}
	cmd, err := m.c.evalAck(ctx, m.replicas, m.ttl, extendScript, []string{m.k.lock}, value, m.ttl.Milliseconds())
	if err != nil {
		return g, false, err
	}
	if n, _ := cmd.Int64(); n != 1 {
		return g, false, nil
	}
	g.ok, g.token, g.pttl = true, tok, m.ttl
	return g, true, nil
}
