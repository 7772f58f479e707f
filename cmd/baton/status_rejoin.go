package main

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/store"
)

// reconnecting is `status --watch`'s source: it outlives a store outage
// and its session, as `lock` waiters rejoin their line (waitInLine). When
// a read or a wait fails in a way that may pass, it says so on stderr
// once, has the inspector open a new session if the one in use has ended,
// and reads again, backing off from 100 ms to 2 s; it gives up after
// failures have gone on for retry in a row.
type reconnecting struct {
	m     *Main
	in    store.Inspector
	src   statusSource
	name  string
	retry time.Duration
	first time.Time // the first failure of the current run of failures
}

func (r *reconnecting) read(ctx context.Context) (statusReport, error) {
	backoff := 100 * time.Millisecond
	for {
		rep, err := r.src.read(ctx)
		if err == nil {
			if !r.first.IsZero() {
				fmt.Fprintf(r.m.Stderr, "baton: status %s: reading again\n", r.name)
			}
			r.first = time.Time{}
			return rep, nil
		}
		if err := r.mend(ctx, err, backoff); err != nil {
			return statusReport{}, err
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// wait returns nil (read again) after a failure mend copes with.
func (r *reconnecting) wait(ctx context.Context) error {
	err := r.src.wait(ctx)
	if err == nil || ctx.Err() != nil {
		return err
	}
	return r.mend(ctx, err, 100*time.Millisecond)
}

// mend copes with a failure to read or wait: it returns err if it may
// not pass or has gone on for r.retry; else, after backoff, it has a new
// session opened if the one in use has ended (a failure to open counts as
// one more failure, for the next read to find) and returns nil.
func (r *reconnecting) mend(ctx context.Context, err error, backoff time.Duration) error {
	if ctx.Err() != nil || !mendable(err) {
		return err
	}
	if r.first.IsZero() {
		r.first = time.Now()
		fmt.Fprintf(r.m.Stderr, "baton: status %s: cannot read the store (%s); trying again\n", r.name, errLine(err))
	} else if time.Since(r.first) >= r.retry {
		return fmt.Errorf("%w (failing for %v)", err, r.retry)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(backoff):
	}
	if reopened, err := r.in.Connect(ctx); err == nil && reopened {
		fmt.Fprintf(r.m.Stderr, "baton: status %s: reconnected with a new session\n", r.name)
	}
	return nil
}
