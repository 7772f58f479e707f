package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/store"
	"github.com/batonhq/baton/internal/supervise"
)

// electRequeue is `baton elect --requeue NAME [--value V] -- CMD`: a
// baton.LeaderSelector that campaigns again after every turn. Each time
// we lead, CMD runs (BATON_ELECTION, BATON_TOKEN, and BATON_TURN, the
// turn's number from 1); when CMD exits, whatever its status, the
// leadership is given up and we join the back of the line; when the
// leadership is lost or in jeopardy, CMD is stopped (SIGTERM, SIGKILL as
// stop says, the watchdog at the loss deadline) and we campaign again, on a new
// session if the old one is gone. Only a SIGINT or SIGTERM ends it: while
// waiting, baton exits 128+n; while CMD runs, CMD gets the signal and
// baton exits with CMD's status.
func (m *Main) electRequeue(ctx context.Context, sigs *signals, sf *storeFlags, name string, value []byte, argv []string, stop stopSpec) error {
	turn := 0
	for first := true; ; first = false {
		s, err := m.reopen(ctx, sigs, sf, first)
		if err != nil {
			return err
		}
		err = m.requeueOn(ctx, sigs, s, name, value, argv, stop, &turn)
		gone := s.Session.Err()
		closeStore(s)
		if gone == nil || err == nil {
			return err
		}
		fmt.Fprintf(m.Stderr, "baton: elect %s: session ended (%v); campaigning again on a new one\n", name, gone)
	}
}

// reopen opens the store for another round of campaigning. The first open
// fails as any command's does; later ones are retried (with a growing
// pause) until they succeed or a signal or a usage error ends them.
func (m *Main) reopen(ctx context.Context, sigs *signals, sf *storeFlags, first bool) (*store.Store, error) {
	pause := 100 * time.Millisecond
	for {
		s, err := m.openFor(ctx, sigs, sf, "elect")
		var ee *exitError
		if err == nil || first || errors.As(err, &ee) {
			return s, err
		}
		fmt.Fprintf(m.Stderr, "baton: elect %s: %v; retrying in %v\n", sf.name, err, pause)
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case sig := <-sigs.c:
			t.Stop()
			return nil, exitWith(sigStatus(sig), nil)
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// requeueOn campaigns on s until a signal (an exitError), a failure, or
// the end of s's session (s.Session.Err() is then set).
func (m *Main) requeueOn(ctx context.Context, sigs *signals, s *store.Store, name string, value []byte, argv []string, stop stopSpec, turn *int) error {
	sel := baton.NewLeaderSelector(s.Session, name, value)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The selector runs in its own goroutine; each turn's lease comes
	// here, where CMD runs (reading the signals), and the turn ends when
	// ended is sent: the leadership is given up only once CMD is gone.
	turns, ended := make(chan *baton.Lease), make(chan struct{})
	res := make(chan error, 1)
	go func() {
		res <- sel.Run(rctx, func(fctx context.Context, l *baton.Lease) error {
			select {
			case turns <- l:
			case <-fctx.Done():
				return nil
			}
			<-ended
			return nil
		})
	}()
	quit := func() { cancel(); <-res }
	for {
		select {
		case sig := <-sigs.c:
			quit()
			return exitWith(sigStatus(sig), nil)
		case err := <-res:
			if s.Session.Err() != nil {
				return err
			}
			return wrapExit(err, "elect %s", name)
		case l := <-turns:
			*turn++
			env := []string{"BATON_ELECTION=" + name, "BATON_TOKEN=" + strconv.FormatInt(l.Token(), 10), "BATON_TURN=" + strconv.Itoa(*turn)}
			r, err := m.runCmd(argv, env, sigs, runSpec{lost: l.Done(), stop: stop, guard: true, expiry: deadlineOf(l)})
			ended <- struct{}{}
			switch {
			case err != nil:
				quit()
				return err
			case r.WatchdogDied:
				quit()
				return exitWith(exitFailure, fmt.Errorf("leadership of %s: the watchdog process was killed; CMD stopped", name))
			case r.Stopped:
				quit()
				return exitWith(r.Status, nil)
			case r.Lost:
				fmt.Fprintf(m.Stderr, "baton: leadership of %s lost while CMD ran (%v); CMD stopped; campaigning again\n", name, leaseErr(l, r))
			case r.Jeopardy:
				fmt.Fprintf(m.Stderr, "baton: leadership of %s in jeopardy while CMD ran (no contact with the store confirmed until --grace %v before the loss deadline); CMD stopped; campaigning again\n", name, stop.Grace)
			case r.Status != 0:
				fmt.Fprintf(m.Stderr, "baton: elect %s: CMD exited %d; campaigning again\n", name, r.Status)
			}
		}
	}
}

// leaseErr says why a hold ended while CMD ran.
func leaseErr(l *baton.Lease, r supervise.Result) error {
	if err := l.Err(); err != nil {
		return err
	}
	if r.Expired {
		return errors.New("no contact with the store confirmed before the loss deadline; the watchdog killed CMD")
	}
	return errors.New("ended")
}
