package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/store"
	"github.com/batonhq/baton/redis"
)

// Locker is a lock handle the command line holds: baton.Mutex on the
// session stores, redis.Mutex and redis.Redlock on Redis.
type Locker interface {
	Lock(ctx context.Context) (*baton.Lease, error)
	TryLock(ctx context.Context) (*baton.Lease, error)
	Unlock(ctx context.Context) error
}

var (
	_ Locker = (*baton.Mutex)(nil)
	_ Locker = (*redis.Mutex)(nil)
	_ Locker = (*redis.Redlock)(nil)
)

// newLocker returns the lock handle on name for s's kind of store.
func newLocker(s *store.Store, name string) Locker {
	switch {
	case s.Redis != nil:
		return redis.NewMutex(s.Redis, name, redis.WithTTL(s.TTL), redis.WithTelemetry(s.Telemetry))
	case s.Quorum != nil:
		return redis.NewRedlock(s.Quorum, name, redis.WithTTL(s.TTL), redis.WithTelemetry(s.Telemetry))
	}
	return baton.NewMutex(s.Session, name)
}

// acquired is one acquisition of a lock-like recipe.
type acquired struct {
	lease   *baton.Lease
	release func(ctx context.Context) error
	expiry  func() time.Time // the loss deadline, or nil
}

func (h acquired) unlock() {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_ = h.release(ctx)
}

// lockOn acquires name on s; with try, only if it is free (else an error
// wrapping baton.ErrLocked).
func lockOn(ctx context.Context, s *store.Store, name string, try bool) (acquired, error) {
	lk := newLocker(s, name)
	acquire := lk.Lock
	if try {
		acquire = lk.TryLock
	}
	l, err := acquire(ctx)
	if err != nil {
		return acquired{}, err
	}
	h := acquired{lease: l, release: lk.Unlock}
	if e, ok := lk.(baton.Expirer); ok {
		h.expiry = e.Expiry
	} else if s.Session != nil {
		h.expiry = sessionExpiry(s.Session)
	}
	return h, nil
}

// lock is `baton lock [flags] NAME [-- CMD [ARG…]]`.
func (m *Main) lock(ctx context.Context, args []string) error {
	var sf storeFlags
	fs := m.newFlags("lock", "lock [--store URL] [--ttl 10s] [--timeout D | --try] [--kill-after 10s] NAME [-- CMD [ARG…]] | NAME NAME… -- [CMD [ARG…]]", &sf, true)
	try := fs.Bool("try", false, "take the lock only if it is free; exit 75 at once if not (as flock -n)")
	timeout := fs.Duration("timeout", 0, "give up (exit 75) if not acquired within this long; 0 waits forever")
	killAfter := fs.Duration("kill-after", 10*time.Second, "after a loss, SIGKILL CMD's group this long after SIGTERM (the watchdog kills it at the loss deadline at the latest)")
	pos, argv, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	// Several NAMEs only before "--": without it, words after NAME are a
	// forgotten "--" (oneName says so), as in flock's "flock FILE CMD".
	if len(pos) > 1 && argv != nil {
		return m.lockMany(ctx, &sf, pos, argv, *try, *timeout, *killAfter)
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
	if err := m.checkCmd(argv, "BATON_LOCK", name); err != nil {
		return err
	}
	sigs := catchSignals()
	defer sigs.stop()

	s, err := waitFor(ctx, sigs, 0, func(ctx context.Context) (*store.Store, error) { return m.open(ctx, &sf) })
	if err != nil {
		return err
	}
	defer closeStore(s)
	h, err := waitFor(ctx, sigs, *timeout, func(ctx context.Context) (acquired, error) { return lockOn(ctx, s, name, *try) })
	if err != nil {
		if *try && errors.Is(err, baton.ErrLocked) {
			return exitWith(exitTimeout, fmt.Errorf("lock %s: not free (--try): %w", name, err))
		}
		if isTimeout(err) {
			return exitWith(exitTimeout, fmt.Errorf("lock %s: not acquired within %v", name, *timeout))
		}
		return wrapExit(err, "lock %s", name)
	}
	defer h.unlock()
	env := []string{"BATON_LOCK=" + name, "BATON_TOKEN=" + strconv.FormatInt(h.lease.Token(), 10)}
	return m.runHeld(sigs, h.lease, h.expiry, "lock "+name, env, argv, *killAfter)
}
