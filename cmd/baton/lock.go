package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/store"
)

// lockSpec is how `baton lock` takes its locks: which lock the store
// makes, and whether only if free (TryLock).
type lockSpec struct {
	store.LockSpec
	try bool
}

// acquired is one acquisition of a lock-like recipe.
type acquired struct {
	lease   *baton.Lease
	release func(ctx context.Context) error
	names   string // several locks: their names as given, in lock order
}

func (h acquired) unlock() {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_ = h.release(ctx)
}

// lockOn acquires name on s as spec says; with spec.try, only if it is
// free (else an error wrapping baton.ErrLocked).
func lockOn(ctx context.Context, s *store.Store, name string, spec lockSpec) (acquired, error) {
	lk, err := s.Locker(name, spec.LockSpec)
	if err != nil {
		return acquired{}, err
	}
	acquire := lk.Lock
	if spec.try {
		acquire = lk.TryLock
	}
	l, err := acquire(ctx)
	if err != nil {
		return acquired{}, err
	}
	return acquired{lease: l, release: lk.Unlock}, nil
}

// lock is `baton lock [flags] NAME [-- CMD [ARG…]]`.
func (m *Main) lock(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("lock", "lock [--store URL] [--ttl 10s] [--replicas N] [--timeout D | --try] [--shared] [--retry 1m] [-v] [--grace D] [--kill-after 10s] [--lock-delay D] [--on-revoke ignore|term] NAME [-- CMD [ARG…]] | NAME NAME… -- [CMD [ARG…]]", &sf, true)
	addReplicasFlag(fs, &sf)
	try := fs.Bool("try", false, "take the lock only if it is free; exit 75 at once if not (as flock -n)")
	shared := fs.Bool("shared", false, "take a read lock: any number of --shared holders at once, none while a plain 'baton lock' (the writer) holds NAME; writers queued first go first (as flock -s; zk:// and etcd:// only)")
	timeout := fs.Duration("timeout", 0, "give up (exit 75) if not acquired within this long of waiting in line; a free lock is taken whatever D; 0 waits forever")
	stopF := addStopFlags(fs)
	delay := fs.Duration("lock-delay", 0, "after a holder's session ended without a release, keep the lock unavailable this long (Chubby's lock-delay; zk:// and etcd:// only; every client of the lock must use the same)")
	onRevoke := fs.String("on-revoke", "ignore", "what a revocation request (baton revoke NAME, Curator's Revoker) does: ignore it, or term: stop CMD (as on a loss) and release (zk:// and etcd://; with several NAMEs, a request to any of them)")
	retry, verbose := waitFlags(fs)
	pos, argv, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	stop, err := stopF.spec("lock", sf.ttl)
	if err != nil {
		return err
	}
	switch {
	case *onRevoke != "ignore" && *onRevoke != "term":
		return usageErr("lock: --on-revoke %q: want ignore or term", *onRevoke)
	case *onRevoke == "term" && *shared:
		return usageErr("lock: --on-revoke term is for the writer's lock, not --shared")
	}
	if *shared && *delay > 0 {
		return usageErr("lock: --lock-delay is for the writer's lock, not --shared")
	}
	spec := lockSpec{LockSpec: store.LockSpec{Shared: *shared, Delay: *delay, Revocable: *onRevoke == "term"}, try: *try}
	// Several NAMEs only before "--": without it, words after NAME are a
	// forgotten "--" (oneName says so), as in flock's "flock FILE CMD".
	if *shared {
		sf.verb = "lock --shared" // the identity status shows
	}
	if len(pos) > 1 && argv != nil {
		l := &line{sf: &sf, names: pos, retry: *retry, verbose: *verbose}
		return m.lockMany(ctx, l, argv, spec, *timeout, stop)
	}
	name, err := oneName(fs, pos)
	if err != nil {
		return err
	}
	sf.name = name
	if argv != nil && len(argv) == 0 {
		return usageErr("lock: no CMD after --")
	}
	if *try && *timeout > 0 {
		return usageErr("lock: --try and --timeout exclude each other")
	}
	if err := m.checkCmd(argv, "BATON_LOCK", name, &sf); err != nil {
		return err
	}
	sigs := catchSignals()
	defer sigs.stop()

	l := &line{sf: &sf, what: "lock " + name, names: []string{name}, retry: *retry, verbose: *verbose}
	if *try {
		l.retry = 0 // --try answers at once, outage or not
	}
	if err := m.openLine(ctx, sigs, l, spec.Needs()); err != nil {
		return err
	}
	defer l.close()
	inLine := func(spec lockSpec) func(context.Context) (acquired, error) {
		return func(ctx context.Context) (acquired, error) {
			return waitInLine(ctx, l, func(ctx context.Context, s *store.Store) (acquired, error) {
				return lockOn(ctx, s, name, spec)
			})
		}
	}
	free := spec // free: a free lock is taken whatever --timeout
	free.try = true
	h, err := waitForFree(ctx, sigs, *timeout, inLine(free), inLine(spec))
	if err != nil {
		if *try && errors.Is(err, baton.ErrLocked) {
			return exitWith(exitTimeout, fmt.Errorf("lock %s: not free (--try): %w", name, err))
		}
		if isTimeout(err) {
			return exitWith(exitTimeout, fmt.Errorf("lock %s: not acquired within %v%s", name, *timeout, guardNote(err)))
		}
		return wrapExit(err, "lock %s", name)
	}
	defer h.unlock()
	l.held(h.lease)
	env := []string{"BATON_LOCK=" + name, "BATON_TOKEN=" + strconv.FormatInt(h.lease.Token(), 10)}
	return m.runHeld(sigs, h.lease, "lock "+name, env, argv, stop)
}

// waitFlags adds --retry and -v, the flags of a command that waits in
// line.
func waitFlags(fs *flagSet) (retry *time.Duration, verbose *bool) {
	retry = fs.Duration("retry", defaultRetry, "after losing its place in line while waiting (a store outage, a session that ended), rejoin the line, at its end, as long as failures have not gone on this long in a row; 0: exit 1 at once")
	verbose = fs.Bool("v", false, "show the wait in line (position, holder) even when stderr is not a terminal, and each session renewal; the wait is read by polling, not watched: from 0.1s, backing off to every 2s (0.1s per waiter ahead, if longer)")
	return retry, verbose
}
