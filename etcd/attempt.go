package etcd

import (
	"context"
	"time"
)

// On a cluster a request can wait far longer than it needs to. One that a
// member forwarded to a leader that has just died, or that a member cut
// off from its peers accepted, is answered only when the server's own
// request timeout expires (5 s plus two election timeouts), although the
// other members elect a new leader within an election timeout or two. So
// each try of a request that is safe to repeat has a deadline of its own,
// attemptTimeout, and the retry goes to another member (the client takes
// the members it can reach in turn, for all the session's requests). The
// first three tries have a second each, so that between them they reach
// every member of a three-member cluster even while an election runs; the
// deadline doubles from the fourth try on, so a server that is merely slow
// still answers.
const (
	firstAttempt = time.Second
	maxAttempt   = 16 * time.Second
)

// attemptTimeout bounds the n-th try (from 0) of a request: 1 s, 1 s, 1 s,
// 2 s, 4 s, … up to maxAttempt.
func attemptTimeout(n int) time.Duration {
	return min(firstAttempt<<min(max(n-2, 0), 4), maxAttempt)
}

// attempt returns the context of the n-th try of a request made for ctx:
// ctx, also cancelled when the session ends, with the try's deadline.
func (c *conn) attempt(ctx context.Context, n int) (context.Context, context.CancelFunc) {
	lctx, lcancel := c.withLife(ctx)
	actx, acancel := context.WithTimeout(lctx, attemptTimeout(n))
	return actx, func() { acancel(); lcancel() }
}

// again reports whether a try that failed with err, on actx (from
// attempt), should be made again: the request's outcome is unknown because
// the connection failed or the try ran out of time, while neither ctx nor
// the session is over.
func (c *conn) again(ctx, actx context.Context, err error) bool {
	if ctx.Err() != nil || c.Err() != nil {
		return false
	}
	return actx.Err() != nil || retryable(err)
}
