package main

import (
	"flag"
	"time"

	"github.com/batonhq/baton/internal/handle"
	"github.com/batonhq/baton/internal/supervise"
)

// stopSpec is how CMD is told to stop while a hold is in danger or over
// (--grace, --kill-after).
type stopSpec = supervise.Stop

// stopFlags are --grace and --kill-after, the flags of the commands that
// run CMD under a hold (lock, elect, semaphore).
type stopFlags struct {
	grace     optDuration
	killAfter time.Duration
}

// addStopFlags adds --grace and --kill-after to fs.
func addStopFlags(fs *flagSet) *stopFlags {
	f := &stopFlags{}
	fs.Var(&f.grace, "grace", "once no contact with the store has been confirmed until this `duration` before the loss deadline (last confirmed contact + TTL − margin), SIGTERM CMD's group, so that CMD can clean up before its SIGKILL at the deadline; the watchdog sends it even if baton is stopped. A hold out of contact that long is given up (exit 76) even if contact comes back. Default: the smaller of 1s and a fifth of --ttl; 0: no notice before the deadline")
	fs.DurationVar(&f.killAfter, "kill-after", 10*time.Second, "after CMD's SIGTERM (the hold lost, revoked, or in jeopardy: --grace), SIGKILL its group this long later; at the loss deadline at the latest")
	return f
}

// spec resolves --grace for a hold of the given TTL and checks it: the
// notice must come after the renewal every TTL/3 had its chance, or every
// hold would be told to stop between two renewals.
func (f *stopFlags) spec(verb string, ttl time.Duration) (stopSpec, error) {
	sp := stopSpec{Grace: handle.DefaultGrace(ttl), KillAfter: f.killAfter}
	if f.grace.set {
		sp.Grace = f.grace.d
	}
	if ttl < minTTL || ttl > maxTTL {
		return sp, nil // --ttl's own check says so
	}
	if limit := graceLimit(ttl); sp.Grace >= limit {
		return sp, usageErr("%s: --grace %v: must be under %v with --ttl %v (a hold renews every TTL/3 and is given up TTL/5 before its TTL runs out without contact; this much grace would stop CMD between two renewals)",
			verb, sp.Grace, limit, ttl)
	}
	return sp, nil
}

// graceLimit is the longest grace a hold of the given TTL allows: the
// time from a confirmed contact to the loss deadline (TTL − TTL/5, the
// largest margin of any store, ZooKeeper's) less one renewal period.
func graceLimit(ttl time.Duration) time.Duration {
	return (ttl - ttl/5 - ttl/3).Truncate(time.Millisecond)
}

// optDuration is a duration flag that knows whether it was given.
type optDuration struct {
	d   time.Duration
	set bool
}

var _ flag.Getter = (*optDuration)(nil)

func (o *optDuration) String() string {
	if o == nil || !o.set {
		return ""
	}
	return o.d.String()
}

func (o *optDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	o.d, o.set = d, true
	return nil
}

// Get makes parseArgs refuse a negative value, as for every duration.
func (o *optDuration) Get() any { return o.d }
