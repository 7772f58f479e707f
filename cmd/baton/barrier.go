package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton"
)

// barrier is `baton barrier set|remove NAME`, `baton barrier wait
// [--timeout D] NAME` and `baton barrier double -n N [--timeout D] NAME
// [-- CMD [ARG…]]`.
func (m *Main) barrier(ctx context.Context, args []string) error {
	v, args, err := m.verb("barrier", args, "set", "wait", "remove", "double")
	if err != nil {
		return err
	}
	var sf storeFlags
	fs := m.newFlags("barrier "+v, map[string]string{
		"set": "barrier set [--store URL] NAME            raise the barrier",
		"wait": "barrier wait [--store URL] [--timeout D] NAME   wait until the barrier is removed\n" +
			"       exit 0 once it is removed, 3 at once if it is not set (never set, or removed already), 75 at --timeout",
		"remove": "barrier remove [--store URL] NAME         remove the barrier, releasing every waiter",
		"double": "barrier double -n N [--store URL] [--timeout D] NAME [-- CMD [ARG…]]\n" +
			"       enter when N have arrived, run CMD, leave when all N are done",
	}[v], &sf, v == "double")
	timeout := fs.Duration("timeout", 0, "wait, double: give up (exit 75) after this long; 0 waits forever")
	n := fs.Int("n", 0, "double: number of participants; another N than the first participant inside is refused (exit 2), and may change once all have left")
	name, argv, err := nameArgs(fs, &sf, args)
	if err != nil {
		return err
	}
	if v == "double" && *n < 1 {
		return usageErr("barrier double: -n N (N ≥ 1) is required")
	}
	if argv != nil && (v != "double" || len(argv) == 0) {
		return usageErr("barrier %s: unexpected CMD", v)
	}
	sigs, s, done, err := m.openVerb(ctx, &sf, "barrier")
	if err != nil {
		return err
	}
	defer done()
	do := func(t time.Duration, f func(context.Context) error) error {
		_, err := waitFor(ctx, sigs, t, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
		if isTimeout(err) {
			return exitWith(exitTimeout, fmt.Errorf("barrier %s %s: not done within %v", v, name, t))
		}
		if errors.Is(err, baton.ErrParticipantsMismatch) {
			return usageErr("barrier %s %s: -n %d: %v", v, name, *n, err)
		}
		if err != nil {
			return wrapExit(err, "barrier %s %s", v, name)
		}
		return nil
	}
	if v == "wait" {
		return m.barrierWait(do, baton.NewBarrier(s.Session, name), *timeout)
	}
	if v != "double" {
		b := baton.NewBarrier(s.Session, name)
		f := map[string]func(context.Context) error{"set": b.Set, "remove": b.Remove}[v]
		return do(sf.dial, f)
	}
	d := baton.NewDoubleBarrier(s.Session, name, *n)
	start := time.Now()
	if err := do(*timeout, d.Enter); err != nil {
		return err
	}
	status := 0
	if argv != nil {
		res, err := m.runCmd(argv, []string{"BATON_BARRIER=" + name}, sigs, runSpec{lost: s.Session.Done(), stop: stopSpec{KillAfter: 10 * time.Second}})
		if err != nil {
			return err
		}
		if res.Lost {
			return exitWith(exitLost, fmt.Errorf("barrier %s: session lost while CMD ran: CMD stopped", name))
		}
		status = res.Status
	}
	var left time.Duration
	if *timeout > 0 {
		left = max(*timeout-time.Since(start), time.Millisecond)
	}
	if err := do(left, d.Leave); err != nil {
		return err
	}
	return exitWith(status, nil)
}

// exitNotSet is `barrier wait`'s status when the barrier is not set.
const exitNotSet = 3

// barrierWait is `barrier wait`: a barrier that is not set is said so
// (exit 3), not taken for one removed, which a typo in NAME or a waiter
// started before the barrier was set would otherwise pass at once. On a
// terminal it says that it waits.
func (m *Main) barrierWait(do func(time.Duration, func(context.Context) error) error, b *baton.Barrier, timeout time.Duration) error {
	began := time.Now()
	up := false
	err := do(timeout, func(ctx context.Context) (err error) {
		up, err = b.IsSet(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if !up {
		return exitWith(exitNotSet, fmt.Errorf("barrier wait %s: the barrier is not set (never set, or removed already)", b.Name()))
	}
	if isTerminal(m.Stderr) {
		fmt.Fprintf(m.Stderr, "baton: barrier %s is set; waiting until it is removed\n", b.Name())
	}
	left := time.Duration(0)
	if timeout > 0 {
		left = max(timeout-time.Since(began), time.Millisecond)
	}
	return do(left, b.Wait)
}
