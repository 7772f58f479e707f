package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/redis"
)

// guardedTimeout is a wait that ran out its --timeout while Redis's
// restart guard held the lock back (the store restarted, or has been up
// for less than a TTL), or while --replicas's replicas did not
// acknowledge its grants: the timeout, and the reason.
type guardedTimeout struct {
	timeout error // wraps errTimeout
	guard   error // wraps redis.ErrRestartGuard or redis.ErrNotAcknowledged
}

func (g guardedTimeout) Error() string   { return g.timeout.Error() }
func (g guardedTimeout) Unwrap() []error { return []error{g.timeout, g.guard} }

// timedOut is the error of a wait that ran out its --timeout, the cause
// being what the wait returned: it keeps the restart guard's reason, if
// the cause gives one, for guardNote.
func timedOut(timeout time.Duration, cause error) error {
	err := fmt.Errorf("%w after %v", errTimeout, timeout)
	if errors.Is(cause, redis.ErrRestartGuard) || errors.Is(cause, redis.ErrNotAcknowledged) {
		return guardedTimeout{err, cause}
	}
	return err
}

// guardNote is ": " and the restart guard's reason when err says the
// guard held the lock back ("redis://h:p restarted 0.2s ago (run_id
// changed); locks on it wait until a TTL (6s) has passed: 5.8s left"),
// else "".
func guardNote(err error) string {
	var g guardedTimeout
	if !errors.As(err, &g) {
		return ""
	}
	msg := g.guard.Error()
	for _, end := range []error{context.DeadlineExceeded, context.Canceled} {
		msg = strings.TrimPrefix(msg, end.Error()+": ")
	}
	return ": " + msg
}

// reportGuard prints, until stopped, a line each time Redis's restart
// guard starts holding the lock back while this command waits (-v): the
// store restarted, or has been up for less than the TTL, so no lock is
// granted on it until a TTL has passed.
func (l *line) reportGuard() func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		holding := false
		for {
			l.mu.Lock()
			s, held := l.s, l.lease != nil
			l.mu.Unlock()
			var err error
			if !held {
				err = s.RestartGuard()
			}
			if err != nil && !holding {
				fmt.Fprintf(l.m.Stderr, "baton: %s: waiting: %v\n", l.what, err)
			}
			holding = err != nil
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
