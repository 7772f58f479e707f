package redis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/batonhq/baton"
)

// bid is one Lock or TryLock call on a Redlock, across its rounds: what it
// got on each master, and where it stands in their lines.
type bid struct {
	r     *Redlock
	value string
	try   bool

	lined     bool           // in the lines: rounds run the acquire script, not SET NX alone
	ticket    string         // our place in every line: our clock when we joined, in µs
	wake      <-chan handoff // the masters' hand-offs, once we listen (nil if none listens)
	at        []place        // our entries in the lines, from the last round
	lost      []bool         // masters a lined round got no reply from (see places)
	contended bool           // a master put us in its line: another held the key
	noQuorum  int            // consecutive rounds with too few answers
	splits    int            // rounds that got some masters but not a majority
	held      error          // why the restart guard held the last round back, if it did
	timer     *time.Timer    // the wait between rounds (stopped)
}

// take acquires the lock with value: rounds over the masters until one
// wins a majority in time, or a hand-off from a majority of them makes us
// the holder; see Redlock.
func (r *Redlock) take(ctx context.Context, value string, try bool) (*liveLock, error) {
	b := r.newBid(ctx, value, try)
	defer b.close()
	for {
		start := time.Now()
		rs := b.round(ctx, start)
		t := r.count(rs)
		b.noteGuard(t)
		if l := r.won(value, t, start); l != nil {
			// Leave the lines we are still in now: a later waiter would
			// hand us masters there (acquire.lua hands a key on to an
			// earlier waiter), which a holder has no use for.
			r.leave(ctx, b.at)
			return b.hold(l), nil
		}
		if err := r.denied(rs, t.refusals); err != nil {
			// Asking again cannot help.
			b.release(ctx)
			return nil, fmt.Errorf("redis: redlock %s: %w", r.k.lock, err)
		}
		if !b.lined && !try && t.reachable >= r.q.majority() && t.granted+t.guarded < r.q.majority() {
			// Taken elsewhere: join the lines at once, keeping what we got
			// (the next round finds it ours).
			b.join(ctx)
			continue
		}
		if err := b.stop(ctx, t); err != nil {
			return nil, err
		}
		b.join(ctx)
		if l := r.await(ctx, value, b.wake, b.at, t, start, b.pause(t), b.timer); l != nil {
			return b.hold(l), nil
		}
		if ctx.Err() != nil {
			b.release(ctx)
			return nil, guardEnded(ctx.Err(), b.held)
		}
	}
}

// newBid starts a call: in the lines from the first round if the key was
// contended when last taken here, else with SET NX alone.
func (r *Redlock) newBid(ctx context.Context, value string, try bool) *bid {
	b := &bid{r: r, value: value, try: try, at: make([]place, len(r.q.nodes)), lost: make([]bool, len(r.q.nodes)), timer: time.NewTimer(0)}
	<-b.timer.C
	switch {
	case !try && r.q.waited.has(r.k.lock):
		b.join(ctx)
	case !try:
		// Subscribe the masters' channels (once per Client) alongside the
		// first round, so that joining the lines waits for no further
		// round trip.
		for _, nd := range r.q.nodes {
			nd.c.hub.prime(ctx)
		}
	}
	return b
}

// close stops the timer and the listening for hand-offs.
func (b *bid) close() {
	b.timer.Stop()
	if b.wake != nil {
		b.r.unlisten(b.value)
	}
}

// join puts us in the masters' lines from the next round on, with one
// ticket on all of them, and listens for their hand-offs.
func (b *bid) join(ctx context.Context) {
	b.lined = true
	if b.ticket == "" {
		b.ticket = strconv.FormatInt(time.Now().UnixMicro(), 10)
	}
	if b.wake == nil {
		b.wake = b.r.listen(ctx, b.value)
	}
}

// round asks every master once, sent at start: SET NX PX alone until we
// are in the lines (an uncontended acquisition costs one command per
// master), then the acquire script, which takes the lock or joins the
// line (refreshes our place). It keeps the places the masters gave us.
func (b *bid) round(ctx context.Context, start time.Time) []reply {
	r := b.r
	if !b.lined {
		return r.q.round(ctx, r.timeout(), r.ttl, func(ctx context.Context, nd *node) reply {
			ok, err := nd.c.setNX(ctx, r.k.lock, b.value, r.ttl)
			return reply{g: grant{ok: ok, pttl: r.ttl, sent: start}, err: err}
		})
	}
	// The round reads a copy: a master it stops waiting for may still be
	// asked after it returns.
	was := b.places()
	rs := r.q.round(ctx, r.timeout(), r.ttl, func(ctx context.Context, nd *node) reply {
		i := slices.Index(r.q.nodes, nd)
		g, err := runAcquire(ctx, nd.c, r.k, b.value, r.ttl, modeFair, false, was[i])
		return reply{g: g, err: err}
	})
	for i, x := range rs {
		if x.err != nil {
			b.lost[i] = true
		}
		switch {
		case x.err == nil:
			b.at[i] = x.g.at // empty when granted
			b.contended = b.contended || b.at[i].entry != ""
		case !isTimeout(x.err):
			b.at[i] = place{} // refused: a restarted master lost the line
		}
	}
	return rs
}

// places is where we stand in the masters' lines, for the next round or
// for leaving them: our entries and ticket, and whether to sweep. A master
// a lined round got no reply from (timed out, cut short by ctx's end) may
// have run the script all the same: a join left an entry we never learnt,
// a refresh replaced the entry we still name by one we do not know, so
// that naming ours would leave that one behind (on the next refresh: in
// line twice; on leaving: an entry a release hands the key to). There we
// sweep every entry of ours at our ticket, until the call ends, since a
// late request may land after a later round. A round that got every reply
// sweeps nowhere and runs the commands it always did.
func (b *bid) places() []place {
	at := slices.Clone(b.at)
	for i := range at {
		at[i].ticket, at[i].sweep = b.ticket, b.lost[i]
	}
	return at
}

// noteGuard keeps why the restart guard held round t back, if it did. A
// round that too few masters answered (cut short by ctx's end) says
// nothing.
func (b *bid) noteGuard(t tally) {
	if h := b.r.heldBack(t); h != nil || t.reachable >= b.r.q.majority() {
		b.held = h
	}
}

// stop returns why the call ends after round t, which did not win, giving
// back what we got: ctx ended, too few masters answered (at once for
// TryLock; for Lock, rounds in a row when the silent ones refused us), or
// TryLock found the lock taken. It returns nil when Lock is to wait.
func (b *bid) stop(ctx context.Context, t tally) error {
	r := b.r
	if b.try || ctx.Err() != nil {
		b.release(ctx)
		if ctx.Err() != nil {
			return guardEnded(ctx.Err(), b.held)
		}
	}
	// Masters that merely timed out may be slow, so Lock keeps trying
	// them; those that refused us are down.
	if t.reachable >= r.q.majority() {
		b.noQuorum = 0
	} else if b.noQuorum++; b.try || (t.reachable+t.slow < r.q.majority() && b.noQuorum >= noQuorumRounds) {
		b.release(ctx)
		return fmt.Errorf("%w: %s: %d of %d answered, need %d: %w",
			ErrNoQuorum, r.k.lock, t.reachable, len(r.q.nodes), r.q.majority(), errors.Join(t.errs...))
	}
	if !b.try {
		return nil
	}
	if b.held != nil {
		return fmt.Errorf("%w: %s: %w", baton.ErrLocked, r.k.lock, b.held)
	}
	return fmt.Errorf("%w: %s", baton.ErrLocked, r.k.lock)
}

// pause is how long to wait for the masters to hand us the lock after
// round t before looking again: soon after a split vote or a guarded
// master, when the earliest holder's key expires, and at the latest in
// ttl/3 to refresh our places.
func (b *bid) pause(t tally) time.Duration {
	r := b.r
	wait := r.ttl / 3
	switch {
	case t.guarded > 0 || b.noQuorum > 0:
		wait = r.ttl / 20
	case slices.Contains(t.mine, true):
		// Some masters are ours, not a majority. We keep them: the others
		// may be on their way (a release in flight), or held by a later
		// waiter, which hands them to us when it looks again, as we hand
		// ours to an earlier one (acquire.lua). Look again soon, less
		// often while it lasts.
		b.splits++
		wait = min(r.timeout()<<min(b.splits-1, 5), r.ttl/3)
		wait = wait/2 + rand.N(wait/2+1)
	case t.wait >= 0 && t.wait < wait:
		wait = max(t.wait, time.Millisecond)
	}
	return wait
}

// hold records what a won call leaves for Unlock: the lines it is still
// in (on masters that had not handed over), and whether the key was
// contended.
func (b *bid) hold(l *liveLock) *liveLock {
	b.r.lines = b.places()
	b.r.q.waited.set(b.r.k.lock, b.contended)
	return l
}

// release gives back what we got and leaves the lines.
func (b *bid) release(ctx context.Context) { _ = b.r.release(ctx, b.value, nil, b.places()) }
