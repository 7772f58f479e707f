package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/store"
)

// defaultRetry is how long `baton lock` keeps rejoining the line by
// default.
const defaultRetry = time.Minute

// line is a command's place in a recipe's line. It owns the store: after
// a loss while waiting (a store outage, a session that ended), it opens a
// new session if needed and rejoins the line, saying so on stderr. It
// shows the wait on a terminal (or with -v), and with -v the session's
// renewals.
type line struct {
	m       *Main
	sf      *storeFlags
	what    string // "lock NAME", in messages
	names   []string
	retry   time.Duration // 0: never rejoin
	verbose bool

	mu    sync.Mutex
	s     *store.Store
	lease *baton.Lease // the hold, once held
	stop  func()       // ends the -v renewal reports
}

// openLine opens the store for l (a signal cancels the dial) and, with
// -v, starts reporting the session's renewals.
func (m *Main) openLine(ctx context.Context, sigs *signals, l *line, need string) error {
	l.m = m
	s, err := m.openFor(ctx, sigs, l.sf, need)
	if err != nil {
		return err
	}
	l.s = s
	l.stop = func() {}
	if l.verbose {
		renewals, guard := l.reportRenewals(), l.reportGuard()
		l.stop = func() { renewals(); guard() }
	}
	return nil
}

// store is the store in use now.
func (l *line) store() *store.Store {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s
}

// close ends the renewal reports and the session.
func (l *line) close() {
	l.stop()
	closeStore(l.store())
}

// held records the hold, whose loss deadline -v reports from now on.
func (l *line) held(lease *baton.Lease) {
	l.mu.Lock()
	l.lease = lease
	l.mu.Unlock()
}

// session returns the store, first opening a new session if the one in
// use has ended, giving up the dial after dial (0: --dial-timeout).
func (l *line) session(ctx context.Context, dial time.Duration) (*store.Store, error) {
	s := l.store()
	if s.Err() == nil {
		return s, nil
	}
	sf := l.sf
	if dial > 0 && dial < sf.dial {
		bounded := *l.sf
		bounded.dial = dial
		sf = &bounded
	}
	ns, err := l.m.open(ctx, sf)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	old := l.s
	l.s = ns
	l.mu.Unlock()
	closeStore(old)
	fmt.Fprintf(l.m.Stderr, "baton: %s: reconnected with a new session; rejoining the line\n", l.what)
	return ns, nil
}

// waitInLine runs get (one wait in line, on the store in use) until it
// succeeds. After a failure that may pass (a store outage, a lost
// session), it rejoins the line (at its end) unless ctx is done, the
// error is one no retry mends, or failures have gone on for l.retry since
// the last attempt that lasted that long. The pauses and the dials of a
// new session count against l.retry: a dial is given what is left of it.
func waitInLine[T any](ctx context.Context, l *line, get func(context.Context, *store.Store) (T, error)) (T, error) {
	var zero T
	var first time.Time // the first failure of the current run of failures
	backoff := 100 * time.Millisecond
	var last error // the last failure, while rejoining
	for {
		var dial time.Duration
		if !first.IsZero() {
			if dial = (l.retry - time.Since(first)).Truncate(time.Millisecond); dial <= 0 {
				return zero, fmt.Errorf("%w (no place in line for --retry %v)", last, l.retry)
			}
		}
		s, err := l.session(ctx, dial)
		if err == nil {
			began := time.Now()
			stop := l.showWait(ctx, s)
			var v T
			v, err = get(ctx, s)
			stop()
			if err == nil {
				return v, nil
			}
			if time.Since(began) >= l.retry {
				first, backoff = time.Time{}, 100*time.Millisecond
			}
		}
		if ctx.Err() != nil || l.retry <= 0 || !mendable(err) {
			return zero, err
		}
		last = err
		if first.IsZero() {
			first = time.Now()
			fmt.Fprintf(l.m.Stderr, "baton: %s: lost its place in line (%s); rejoining\n", l.what, errLine(err))
		} else if time.Since(first) >= l.retry {
			return zero, fmt.Errorf("%w (no place in line for --retry %v)", err, l.retry)
		}
		select {
		case <-ctx.Done():
			return zero, ctx.Err()
		case <-time.After(min(backoff, l.retry-time.Since(first))):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// mendable reports whether a failure to wait in line may pass by trying
// again: not bad input, a refusal (permissions, credentials, a peer's
// layout), or --try's "not free".
func mendable(err error) bool {
	var ee *exitError
	if errors.As(err, &ee) {
		return false
	}
	for _, e := range []error{baton.ErrLocked, baton.ErrInvalidName, baton.ErrInvalidTTL, baton.ErrIncompatible,
		baton.ErrPermission, baton.ErrUpgrade, baton.ErrInvalidPermits, baton.ErrInvalidParticipants,
		store.ErrAuth, store.ErrBadTLS, store.ErrBadURL, store.ErrUnavailable} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

// reportRenewals prints, until stopped, each renewal of the session (or,
// once held, of the hold's loss deadline): every confirmed contact with
// the store that pushes the deadline forward.
func (l *line) reportRenewals() func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		var last time.Time
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			l.mu.Lock()
			exp := l.s.Expiry
			if l.lease != nil {
				exp = l.lease.Deadline
			}
			l.mu.Unlock()
			d := exp()
			if d.IsZero() || !d.After(last) {
				continue
			}
			// Report a renewal, not each reply: a move of a tenth of the
			// TTL or more.
			if !last.IsZero() && d.Sub(last) < l.sf.ttl/10 {
				continue
			}
			last = d
			fmt.Fprintf(l.m.Stderr, "baton: %s: session renewed; lost in %v without contact\n", l.what, time.Until(d).Round(100*time.Millisecond))
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
