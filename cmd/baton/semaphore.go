package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/batonhq/baton"
)

// semaphore is `baton semaphore -n N [flags] NAME [-- CMD [ARG…]]`.
func (m *Main) semaphore(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("semaphore", "semaphore -n N [--store URL] [--ttl 10s] [--timeout D] [--grace D] [--kill-after 10s] [--permit-ttl D] NAME [-- CMD [ARG…]]", &sf, true)
	n := fs.Int("n", 0, "number of holders allowed at once, recorded with the semaphore: another N is refused (exit 2) while anyone holds or waits, and replaces it once nobody does")
	timeout := fs.Duration("timeout", 0, "give up (exit 75) if not acquired within this long of waiting in line; a free lease is taken whatever D; 0 waits forever")
	stopF := addStopFlags(fs)
	permitTTL := fs.Duration("permit-ttl", 0, "take an expiring permit (PermitSemaphore) that ends after this long unless extended (baton permit extend); CMD gets its id as BATON_PERMIT")
	name, argv, err := nameArgs(fs, &sf, args)
	if err != nil {
		return err
	}
	stop, err := stopF.spec("semaphore", sf.ttl)
	if err != nil {
		return err
	}
	if *n < 1 {
		return usageErr("semaphore: -n N (N ≥ 1) is required")
	}
	if *n > baton.MaxPermits {
		return usageErr("semaphore: -n %d: %v: at most %d (the semaphore records N as a 32-bit int, as Curator's SharedCount)", *n, baton.ErrInvalidPermits, baton.MaxPermits)
	}
	if *permitTTL < 0 {
		return usageErr("semaphore: --permit-ttl must be positive")
	}
	if argv != nil && len(argv) == 0 {
		return usageErr("semaphore: no CMD after --")
	}
	if err := m.checkCmd(argv, "", name, &sf); err != nil {
		return err
	}
	sigs, s, done, err := m.openVerb(ctx, &sf, "semaphore")
	if err != nil {
		return err
	}
	defer done()
	if *permitTTL > 0 {
		return m.permitHeld(ctx, sigs, s.Session, name, *n, *permitTTL, *timeout, stop, argv)
	}
	sem, err := s.Semaphore(name, *n, "semaphore")
	if err != nil {
		return usageErr("%v", err)
	}
	l, err := waitForFree(ctx, sigs, *timeout, sem.TryAcquire, sem.Acquire)
	if err != nil {
		if isTimeout(err) {
			return exitWith(exitTimeout, fmt.Errorf("semaphore %s: not acquired within %v", name, *timeout))
		}
		if errors.Is(err, baton.ErrPermitsMismatch) || errors.Is(err, baton.ErrInvalidPermits) {
			return usageErr("semaphore %s: -n %d: %v", name, *n, err)
		}
		return wrapExit(err, "semaphore %s", name)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_ = sem.Release(ctx, l)
	}()
	env := []string{"BATON_SEMAPHORE=" + name, "BATON_TOKEN=" + strconv.FormatInt(l.Token(), 10)}
	return m.runHeld(sigs, l, "semaphore "+name, env, argv, stop)
}
