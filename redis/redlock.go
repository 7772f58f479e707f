package redis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/batonhq/baton"
)

// ErrNoQuorum is returned (wrapped) by Redlock's Lock and TryLock when
// fewer than a majority of the masters answer, so no lock can be granted
// until some come back.
var ErrNoQuorum = errors.New("redis: redlock: no quorum of instances reachable")

// noQuorumRounds is how many consecutive rounds without a majority of
// answers Lock tries before failing.
const noQuorumRounds = 3

// Redlock is the Redlock algorithm over the N independent masters of a
// Quorum, with the same handle as baton.Mutex.
//
// To acquire, it sends SET K value NX PX ttl (as a script that also
// returns the holder's remaining ttl) to all masters in parallel, each
// bounded by a small timeout (ttl/50, between 100ms and 200ms). It holds the
// lock if at least N/2+1 granted it and the validity, ttl minus the time
// the round took minus the drift allowance (ttl×0.01 + 2ms), is positive;
// validity is measured on the monotonic clock from when the round was
// sent. Otherwise it deletes the key on every master, then retries after a
// random delay, or sooner when a holder's release is published. It renews
// every ttl/3 with compare-and-pexpire on all masters, and keeps the lock
// only if a majority confirmed within the validity; the lease ends as lost
// otherwise. The key and its value are those of redsync, which contends
// with it.
//
// Restart guard: a master whose run_id changed since this process last saw
// it, or that has been up for less than a ttl, does not count toward a
// quorum for one ttl, since it may have lost keys without persistence.
//
// Redlock gives no fencing token: the lease's Token is always 0. It relies
// on bounded clock drift and no clock jumps, and on masters not losing
// keys (fsync, or the restart guard above). See the package doc.
//
// When fewer than a majority of masters answer, TryLock fails at once with
// an error wrapping ErrNoQuorum; so does Lock, after three rounds (a
// fraction of the ttl), when the others refuse connections. Masters that
// time out may only be slow: Lock keeps trying them until ctx ends. A Redlock value is one
// holder, re-entrant; it must not be copied after first use.
type Redlock struct {
	q   *Quorum
	k   keys
	ttl time.Duration

	reentry
}

// NewRedlock returns a Redlock on key over q's masters. It does no I/O.
func NewRedlock(q *Quorum, key string, opts ...Option) *Redlock {
	o := buildOptions(opts)
	return &Redlock{q: q, k: keysFor(key), ttl: o.ttl, reentry: reentry{turn: make(chan struct{}, 1)}}
}

// Key is the lock's Redis key.
func (r *Redlock) Key() string { return r.k.lock }

// Lock acquires the lock, retrying for as long as ctx allows; see Redlock.
// The lease's Token is 0 (Redlock has no fencing token).
func (r *Redlock) Lock(ctx context.Context) (*baton.Lease, error) { return r.acquire(ctx, false) }

// TryLock makes one attempt. It returns an error wrapping baton.ErrLocked
// when the lock is held elsewhere (or votes split), and one wrapping
// ErrNoQuorum when too few masters answer.
func (r *Redlock) TryLock(ctx context.Context) (*baton.Lease, error) { return r.acquire(ctx, true) }

// Unlock releases one level; the last deletes the key on every master
// (where it still holds our value) and ends the lease. It returns
// baton.ErrNotHeld without a hold, and an error wrapping baton.ErrLost if
// the lease was lost.
func (r *Redlock) Unlock(ctx context.Context) error {
	if err := r.enter(ctx); err != nil {
		return err
	}
	defer r.leave()
	h, err := r.drop()
	if h == nil {
		return err
	}

	h.stopRenewal()
	lost := h.lease.Err()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	r.q.round(rctx, r.timeout(), r.ttl, releaseScript, []string{r.k.lock, r.k.token, r.k.queue, r.k.waiting}, h.value, r.k.channel)
	h.end(baton.ErrNotHeld)
	h.wait()
	return lost
}

// Held reports whether this handle holds the lock (its lease is live).
func (r *Redlock) Held() bool {
	return r.live()
}

func (r *Redlock) timeout() time.Duration {
	return min(max(r.ttl/50, 100*time.Millisecond), 200*time.Millisecond)
}

func (r *Redlock) acquire(ctx context.Context, try bool) (*baton.Lease, error) {
	if err := CheckKey(r.k.lock); err != nil {
		return nil, err
	}
	if err := r.enter(ctx); err != nil {
		return nil, err
	}
	defer r.leave()
	if l := r.again(); l != nil {
		return l, nil
	}

	value := randomValue()
	lctx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	var wake chan string
	noQuorum := 0 // consecutive rounds with too few answers
	splits := 0   // rounds that won some votes but not a majority
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	for {
		start := time.Now()
		rs := r.q.round(ctx, r.timeout(), r.ttl, setnxScript, []string{r.k.lock}, value, r.ttl.Milliseconds())
		granted, reachable, guarded, slow := 0, 0, 0, 0
		var errs []error
		var wait time.Duration = -1
		for _, x := range rs {
			switch {
			case x.err != nil:
				errs = append(errs, x.err)
				if isTimeout(x.err) {
					slow++
				}
				continue
			case x.val == -3 && x.trusted:
				granted++
			case x.val == -3:
				guarded++
			case x.val > 0 && (wait < 0 || time.Duration(x.val)*time.Millisecond < wait):
				wait = time.Duration(x.val) * time.Millisecond
			}
			reachable++
		}
		deadline := start.Add(r.ttl - drift(r.ttl))
		if granted >= r.q.majority() && time.Now().Before(deadline) {
			// Held by the spec's validity; the lease reports a loss a
			// safety margin before that validity runs out.
			return r.held(value, start.Add(r.ttl-lossMargin(r.ttl))), nil
		}
		r.clean(ctx, value, try || ctx.Err() != nil || (reachable < r.q.majority() && noQuorum+1 >= noQuorumRounds))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Too few answers: fail fast when the silent masters refused us
		// (down); masters that merely timed out may be slow, so Lock keeps
		// trying them.
		if reachable >= r.q.majority() {
			noQuorum = 0
		} else if noQuorum++; try || (reachable+slow < r.q.majority() && noQuorum >= noQuorumRounds) {
			return nil, fmt.Errorf("%w: %s: %d of %d answered, need %d: %w",
				ErrNoQuorum, r.k.lock, reachable, len(rs), r.q.majority(), errors.Join(errs...))
		}
		if try {
			if guarded > 0 && granted+guarded >= r.q.majority() {
				return nil, fmt.Errorf("%w: %s: %d of %d instances (re)started within the last ttl and do not count yet",
					baton.ErrLocked, r.k.lock, guarded, len(rs))
			}
			return nil, fmt.Errorf("%w: %s", baton.ErrLocked, r.k.lock)
		}
		if wake == nil {
			wake = r.listen(lctx)
		}
		// Retry after a random delay. A split vote is retried within a few
		// milliseconds (the contenders have already deleted their keys); a
		// key held elsewhere is retried on its release message, or at the
		// latest when the earliest holder's key expires.
		switch {
		case guarded > 0 || noQuorum > 0:
			wait = r.ttl / 20
		case granted > 0:
			splits++
			wait = min(time.Millisecond*time.Duration(2+2*splits), 20*time.Millisecond)
		case wait < 0 || wait > r.ttl/3:
			wait = r.ttl / 3
		}
		timer.Reset(wait/2 + rand.N(wait/2+1))
		select {
		case <-wake:
			timer.Stop()
			timer.Reset(rand.N(3 * time.Millisecond))
			select {
			case <-timer.C:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case <-timer.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// listen subscribes to the release channel on every master that confirms
// within the per-instance timeout, merged into one channel, until ctx ends.
func (r *Redlock) listen(ctx context.Context) chan string {
	out := make(chan string, 1)
	for _, n := range r.q.nodes {
		go func() {
			lctx, cancel := context.WithTimeout(ctx, r.timeout())
			l, err := n.c.hub.listen(lctx, r.k.channel, nil)
			cancel()
			if err != nil {
				return
			}
			defer l.Close()
			for {
				select {
				case m := <-l.C:
					select {
					case out <- m:
					default:
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return out
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// clean deletes our value on every master after a failed attempt. When we
// give up (wake), the deletion is published so waiters look again; when we
// retry, we will publish when we release.
func (r *Redlock) clean(ctx context.Context, value string, wake bool) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if wake {
		r.q.round(cctx, r.timeout(), r.ttl, releaseScript, []string{r.k.lock, r.k.token, r.k.queue, r.k.waiting}, value, r.k.channel)
		return
	}
	r.q.round(cctx, r.timeout(), r.ttl, delScript, []string{r.k.lock}, value)
}

func (r *Redlock) held(value string, deadline time.Time) *baton.Lease {
	h := newHold(r.k.lock, 0, value, r.ttl, deadline, func(ctx context.Context) (time.Time, error) {
		start := time.Now()
		rs := r.q.round(ctx, r.timeout(), r.ttl, extendScript, []string{r.k.lock}, value, r.ttl.Milliseconds())
		ok, gone := 0, 0
		for _, x := range rs {
			switch {
			case x.err != nil:
			case x.val == 1 && x.trusted:
				ok++
			case x.val != 1:
				gone++
			}
		}
		if gone > len(rs)-r.q.majority() {
			return time.Time{}, fmt.Errorf("%w: %s: %d of %d instances no longer hold our value", baton.ErrLost, r.k.lock, gone, len(rs))
		}
		nd := start.Add(r.ttl - drift(r.ttl))
		if ok < r.q.majority() || !time.Now().Before(nd) {
			return time.Time{}, fmt.Errorf("redis: redlock %s: extended on %d of %d", r.k.lock, ok, len(rs))
		}
		return start.Add(r.ttl - lossMargin(r.ttl)), nil
	})
	return r.take(h)
}
