package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/batonhq/baton"
)

// signals catches SIGINT, SIGTERM and SIGHUP for the whole command, so
// that baton decides what they mean: cancel a wait, release a hold, or pass
// them on to CMD.
type signals struct {
	c chan os.Signal
}

func catchSignals() *signals {
	s := &signals{c: make(chan os.Signal, 8)}
	signal.Notify(s.c, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	return s
}

// stop stops catching: the default actions apply again.
func (s *signals) stop() { signal.Stop(s.c) }

// cancelling returns a copy of ctx that the next caught signal cancels,
// and its cancel, which the caller must call.
func (s *signals) cancelling(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.c:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// requeue puts a signal back for the next reader.
func (s *signals) requeue(sig os.Signal) {
	select {
	case s.c <- sig:
	default:
	}
}

// sigStatus is the shell's exit status for death by sig.
func sigStatus(sig os.Signal) int {
	if n, ok := sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return exitFailure
}

// errTimeout marks a wait that ran out of --timeout.
var errTimeout = errors.New("timed out")

// waitFor runs get under a ctx that a caught signal or the timeout (if
// positive) cancels. A signal makes it return the signal's exit status; a
// timeout wraps errTimeout with exit status 75. A signal that arrives just
// after get succeeded is put back for the caller.
func waitFor[T any](ctx context.Context, sigs *signals, timeout time.Duration, get func(context.Context) (T, error)) (T, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if timeout > 0 {
		var c2 context.CancelFunc
		wctx, c2 = context.WithTimeout(wctx, timeout)
		defer c2()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := get(wctx)
		ch <- result{v, err}
	}()
	var sig os.Signal
	for {
		select {
		case r := <-ch:
			switch {
			case r.err == nil:
				if sig != nil {
					sigs.requeue(sig)
				}
				return r.v, nil
			case sig != nil:
				return r.v, exitWith(sigStatus(sig), nil)
			case timeout > 0 && ctx.Err() == nil && errors.Is(r.err, context.DeadlineExceeded):
				return r.v, exitWith(exitTimeout, timedOut(timeout, r.err))
			}
			return r.v, r.err
		case s := <-sigs.c:
			if sig == nil {
				sig = s
				cancel()
			}
		}
	}
}

// waitForFree is waitFor whose timeout spares what is free: with a
// positive timeout it first runs try (which answers at once, taking what is
// free) unbounded by the timeout, and waits with wait, bounded, only if try
// says baton.ErrLocked. So --timeout bounds the wait behind holders, never
// the round trips that take a free lock: --timeout 1ns takes a free one.
func waitForFree[T any](ctx context.Context, sigs *signals, timeout time.Duration, try, wait func(context.Context) (T, error)) (T, error) {
	if timeout > 0 {
		v, err := waitFor(ctx, sigs, 0, try)
		if !errors.Is(err, baton.ErrLocked) {
			return v, err
		}
	}
	return waitFor(ctx, sigs, timeout, wait)
}
