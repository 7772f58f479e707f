package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
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
// To acquire, it sends SET K value NX PX ttl to all masters in parallel,
// each bounded by a small timeout (ttl/50, between 100ms and 200ms), and
// waits no longer for a master that has not answered by then. It
// holds the lock if at least N/2+1 granted it and the validity, ttl minus
// the time the round took minus the drift allowance (ttl×0.01 + 2ms), is
// positive; validity is measured on the monotonic clock from when the
// round was sent. It renews every ttl/3 with compare-and-pexpire on all
// masters, and keeps the lock only if a majority confirmed within the
// validity; the lease ends as lost otherwise. The key and its value are
// those of redsync, which contends with it.
//
// Waiting: when the lock is taken (or was, when this Quorum last took
// it: then without a SET NX round first), Lock joins K's line on every
// master (as Mutex does on one), with the same ticket on all of them, its
// client's clock in microseconds when it first asked: every master orders
// the same waiters the same way, and a release, which on each master
// hands the key to the first live waiter in line and publishes to it
// alone, hands all masters to the same waiter. A waiter holds once a
// majority of masters are its own, with validity counted from its last
// round; it asks no further. No waiter polls (FIFO up to the clocks of
// the clients). A round whose reply from a master was lost (later than
// the per-instance timeout, or cut short by ctx's end) may have run there
// all the same, leaving an entry no reply named: the waiter's later rounds
// and its leaving (a cancelled Lock, an Unlock) take out every entry of
// its own at its ticket on that master, so it is never in a line twice
// and leaves nothing behind that a release would hand the key to.
//
// Split votes: a master's key goes to the earliest ticket among its live
// waiters. A waiter takes a free master only if no live waiter there
// asked before it, and a waiter that finds a master's key its own while
// an earlier waiter is in that line hands the key on to that waiter, as
// a release would. So when masters handed their keys to different
// waiters (their lines differed: a join that reached some masters after
// a release, a restarted master, contenders that arrived at a free lock
// at once), each waiter keeps what it has, looks again after about the
// per-instance timeout (less often while it lasts), and later waiters
// hand their masters to earlier ones: the earliest holds, and nothing is
// traded back and forth. A waiter that holds by a round leaves the lines
// it is still in at once (one ZREM each); one that holds by hand-offs
// leaves those of masters that had not handed over when it unlocks. A
// waiter also looks again every ttl/3 (refreshing its places) and when
// the holder's key expires (a holder that crashed, or redsync, which
// does not hand over).
//
// Restart guard: a master whose run_id changed since this process last saw
// it, or that has been up for less than a ttl, does not count toward a
// quorum for one ttl, since it may have lost keys without persistence.
// The run_id is read when a connection is made (a restarted master is
// only reachable through new connections), not per request.
//
// When ctx ends while the guard holds the lock back, Lock's error wraps
// ErrRestartGuard as well as ctx.Err(), and names the masters.
//
// Redlock gives no fencing token: the lease's Token is always 0. It relies
// on bounded clock drift and no clock jumps, and on masters not losing
// keys (fsync, or the restart guard above). See the package doc.
//
// When fewer than a majority of masters answer, TryLock fails at once with
// an error wrapping ErrNoQuorum; so does Lock, after three rounds (a
// fraction of the ttl), when the others refuse connections. Masters that
// time out may only be slow: Lock keeps trying them until ctx ends. A
// Redlock value is one holder that takes turns like a Mutex (counts its
// holds with the Reentrant option); it must not be copied after first
// use.
type Redlock struct {
	lockHandle
	q *Quorum

	// lines are the entries the holder still has in lines (on masters that
	// had not handed over when it won), and the masters to sweep for
	// entries of ours no reply named (see bid.places), left at Unlock.
	// Guarded by gate.
	lines []place
}

// NewRedlock returns a Redlock on key over q's masters; key is a lock name,
// as for NewMutex. It does no I/O.
func NewRedlock(q *Quorum, key string, opts ...Option) *Redlock {
	r := &Redlock{q: q}
	r.init("redlock", key, opts, r)
	if r.bad == nil && q != nil {
		for _, n := range q.nodes {
			if n.c.shards != nil {
				// Its keys would be in three slots; a cluster is one
				// Redis, not Redlock's independent masters.
				r.bad = fmt.Errorf("redis: redlock %s: %s is a Redis Cluster; use NewMutex on it", key, n.c)
				break
			}
		}
	}
	return r
}

// giveBack releases h's value on every master, even when ctx is already
// done (each bounded by the per-instance timeout), and leaves the lines
// the holder is still in.
func (r *Redlock) giveBack(ctx context.Context, h *liveLock, _ error) error {
	err := r.release(ctx, h.value, nil, r.lines)
	r.lines = nil
	if err != nil {
		return fmt.Errorf("redis: redlock unlock %s: %w", r.k.lock, err)
	}
	return nil
}

func (r *Redlock) timeout() time.Duration {
	return min(max(r.ttl/50, 100*time.Millisecond), 200*time.Millisecond)
}

// tally is what one round got.
type tally struct {
	granted, reachable, guarded, slow int
	mine                              []bool        // per master: holds our value
	pttl                              time.Duration // least validity left among grants
	wait                              time.Duration // least ttl left among other holders (<0: unknown)
	errs                              []error
	refusals                          []error // the errs that were refused (baton.ErrPermission)
}

func (r *Redlock) count(rs []reply) tally {
	t := tally{mine: make([]bool, len(rs)), pttl: r.ttl, wait: -1}
	for i, x := range rs {
		switch {
		case x.err != nil:
			t.errs = append(t.errs, x.err)
			if refused(x.err) {
				t.refusals = append(t.refusals, x.err)
			}
			if isTimeout(x.err) {
				t.slow++
			}
			continue
		case x.g.ok:
			t.mine[i] = true
			if x.trusted {
				t.granted++
				t.pttl = min(t.pttl, x.g.pttl)
			} else {
				t.guarded++
			}
		case x.g.pttl > 0 && (t.wait < 0 || x.g.pttl < t.wait):
			t.wait = x.g.pttl
		}
		t.reachable++
	}
	return t
}

// denied returns an error wrapping the refusals (baton.ErrPermission)
// when so many masters refused that no majority can agree, else nil.
func (r *Redlock) denied(rs []reply, refusals []error) error {
	if len(refusals) <= len(rs)-r.q.majority() {
		return nil
	}
	return fmt.Errorf("refused by %d of %d masters: %w", len(refusals), len(rs), errors.Join(refusals...))
}

// await waits up to wait for hand-offs. A master's hand-off counts if it
// is for the entry our last round left there: the key was set after that
// round reached the master, so validity counts from the round's start.
// The masters the round t found ours count too, with their validity. A
// master's entry in at is cleared when it hands over (the release popped
// it). It returns the lease once a majority of trusted masters are ours
// in time, nil when it is time to look again.
func (r *Redlock) await(ctx context.Context, value string, wake <-chan handoff, at []place, t tally, start time.Time, wait time.Duration, timer *time.Timer) *liveLock {
	timer.Reset(wait)
	defer func() {
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}()
	handed := slices.Clone(t.mine)
	validity := min(r.ttl, t.pttl)
	for {
		select {
		case w := <-wake:
			if w.master < 0 {
				return nil // messages may have been missed: look again
			}
			if _, ok := grantFor(w.msg, at[w.master].entry); !ok || handed[w.master] {
				continue
			}
			if !slices.Contains(handed, true) {
				// The other masters hand over in the same release round,
				// which gives each the per-instance timeout: if they do
				// not within that, look again.
				if !timer.Stop() {
					select {
					case <-timer.C:
					default:
					}
				}
				timer.Reset(r.timeout())
			}
			handed[w.master] = true
			at[w.master] = place{} // popped by the hand-off
			if r.trusted(handed) >= r.q.majority() {
				if time.Now().Before(start.Add(validity - drift(r.ttl))) {
					return r.held(value, start.Add(validity-lossMargin(r.ttl)))
				}
				return nil
			}
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// handoff is a wake-up from one master: msg is "<entry> <token>" when it
// handed us the key; master is -1 when messages may have been missed.
type handoff struct {
	master int
	msg    string
}

// won returns the lease if a round got a majority of trusted grants in
// time, else nil.
func (r *Redlock) won(value string, t tally, start time.Time) *liveLock {
	if t.granted < r.q.majority() {
		return nil
	}
	validity := min(r.ttl, t.pttl)
	if !time.Now().Before(start.Add(validity - drift(r.ttl))) {
		return nil
	}
	// Held by the spec's validity; the lease reports a loss a safety
	// margin before that validity runs out.
	return r.held(value, start.Add(validity-lossMargin(r.ttl)))
}

// heldBack returns an error wrapping ErrRestartGuard, naming the masters
// it kept out of the vote, when the restart guard is why round t did not
// win: it granted a majority counting the masters the guard keeps out.
func (r *Redlock) heldBack(t tally) error {
	if t.guarded == 0 || t.granted >= r.q.majority() || t.granted+t.guarded < r.q.majority() {
		return nil
	}
	notes, _ := r.q.guardNotes(r.ttl)
	if len(notes) == 0 {
		notes = []string{fmt.Sprintf("%d restarted less than a TTL ago", t.guarded)}
	}
	return fmt.Errorf("%w: %s", ErrRestartGuard, quorumNote(notes, len(r.q.nodes)))
}

// trusted counts the masters in set that the restart guard trusts.
func (r *Redlock) trusted(set []bool) int {
	n := 0
	for i, in := range set {
		if in && r.q.nodes[i].c.srv.trusted(r.ttl) {
			n++
		}
	}
	return n
}

// listen registers value with every master's hub and merges their
// wake-ups into one channel. Masters whose hub does not confirm within the
// per-instance timeout are left out (rounds still find what they hold).
// nil if no master's hub confirmed.
func (r *Redlock) listen(ctx context.Context, value string) <-chan handoff {
	out := make(chan handoff, 2*len(r.q.nodes))
	forward := func(i int) func(string) {
		return func(msg string) {
			w := handoff{master: i, msg: msg}
			if msg == "" {
				w.master = -1
			}
			select {
			case out <- w:
			default:
			}
		}
	}
	var wg sync.WaitGroup
	var ok atomic.Bool
	for i, nd := range r.q.nodes {
		// Once a hub is subscribed, registering is no I/O: no goroutine.
		if nd.c.hub.listenNow(value, forward(i)) != nil {
			ok.Store(true)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lctx, cancel := context.WithTimeout(ctx, r.timeout())
			defer cancel()
			l, err := nd.c.hub.listen(lctx, value)
			if err != nil {
				return
			}
			ok.Store(true)
			l.setForward(forward(i))
		}()
	}
	wg.Wait()
	if !ok.Load() {
		r.unlisten(value)
		return nil
	}
	return out
}

// leave takes our entries in at out of the masters' lines (one ZREM
// each, no script), where we have one.
func (r *Redlock) leave(ctx context.Context, at []place) {
	if !slices.ContainsFunc(at, func(p place) bool { return p.entry != "" }) {
		return
	}
	at = slices.Clone(at) // read by the round after it returns, maybe
	r.q.round(ctx, r.timeout(), r.ttl, func(ctx context.Context, nd *node) reply {
		e := at[slices.Index(r.q.nodes, nd)].entry
		if e == "" {
			return reply{}
		}
		return reply{err: nd.c.rc.ZRem(ctx, r.k.queue, e).Err()}
	})
}

// unlisten drops value's listeners.
func (r *Redlock) unlisten(value string) {
	for _, nd := range r.q.nodes {
		nd.c.hub.drop(value)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// release gives our value back on the masters in which (all if nil),
// handing each to the next live waiter in line there, and leaves the
// lines we are in (at, if not nil: its entries, and on the masters it
// marks to sweep every entry of ours at its ticket). It returns an error wrapping
// baton.ErrPermission when so many masters refused that the lock may
// stay taken on a majority until its ttl runs out.
func (r *Redlock) release(ctx context.Context, value string, which []bool, at []place) error {
	// Sent even when ctx is done; the round bounds it by the per-instance
	// timeout (well under cleanupTimeout).
	cctx := context.WithoutCancel(ctx)
	which, at = slices.Clone(which), slices.Clone(at) // read by the round after it returns, maybe
	rs := r.q.round(cctx, r.timeout(), r.ttl, func(ctx context.Context, nd *node) reply {
		i := slices.Index(r.q.nodes, nd)
		var p place
		if at != nil {
			p = at[i]
		}
		if which != nil && !which[i] && p.entry == "" && !p.sweep {
			return reply{}
		}
		args := []any{value, p.entry, "0"}
		if p.sweep {
			args = append(args, "", "", p.ticket)
		}
		n, err := nd.c.eval(ctx, releaseScript, r.k.all(), args...).Int64()
		return reply{val: n, err: err}
	})
	return r.denied(rs, r.count(rs).refusals)
}

func (r *Redlock) held(value string, deadline time.Time) *liveLock {
	return newLiveLock(r.k.lock, 0, value, r.ttl, deadline, func(ctx context.Context) (time.Time, error) {
		start := time.Now()
		rs := r.q.round(ctx, r.timeout(), r.ttl, func(ctx context.Context, nd *node) reply {
			n, err := nd.c.eval(ctx, extendScript, []string{r.k.lock}, value, r.ttl.Milliseconds()).Int64()
			return reply{val: n, err: err}
		})
		if err := r.denied(rs, r.count(rs).refusals); err != nil {
			// Retrying cannot help: the hold ends now.
			return time.Time{}, fmt.Errorf("%w: %s: the renewal was %w", baton.ErrLost, r.k.lock, err)
		}
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
}

var _ baton.Locker = (*Redlock)(nil)
