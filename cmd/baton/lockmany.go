package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/store"
)

// lockMany is `baton lock [flags] NAME NAME… [-- CMD [ARG…]]`: every NAME
// held at once, all or nothing (baton.MultiLock), taken in one global
// order so that two commands over overlapping sets never deadlock. CMD
// gets BATON_LOCK (the names in lock order, space-separated), BATON_TOKEN
// (the first lock's fencing token) and BATON_TOKENS (every lock's token,
// space-separated, in the order of BATON_LOCK). With spec.try, every NAME
// is taken only if all are free (MultiLock.TryLock); with spec.revocable,
// a revocation request to any NAME stops CMD (the MultiLock's lease
// carries its parts' requests).
func (m *Main) lockMany(ctx context.Context, l *line, argv []string, spec lockSpec, timeout time.Duration, stop stopSpec) error {
	sf, names := l.sf, l.names
	keys := make([]string, len(names)) // each NAME as the store names it
	for i, n := range names {
		if _, err := cleanName(n); err != nil {
			return err
		}
		// A set naming a lock twice is a bad argument, refused before
		// anything is dialled; on ZooKeeper "a" and "/a" are one lock.
		keys[i] = sf.storeName(n)
		if j := slices.Index(keys[:i], keys[i]); j >= 0 && names[j] == n {
			return usageErr("lock: %q is given twice: give each NAME once", n)
		} else if j >= 0 {
			return usageErr("lock: %q and %q name one lock, %s: give each NAME once", names[j], n, keys[i])
		}
	}
	if spec.try {
		l.retry = 0 // --try answers at once, outage or not
	}
	// Several NAMEs come before "--" (lock lets nothing else through);
	// with no CMD after it, the locks are held until a signal.
	if len(argv) == 0 {
		argv = nil
	}
	for _, n := range names {
		if err := m.checkCmd(argv, "BATON_LOCK", n, sf); err != nil {
			return err
		}
	}
	sf.name = names[0]
	sigs := catchSignals()
	defer sigs.stop()
	what := strings.Join(names, " ")
	l.what = "lock " + what
	if err := m.openLine(ctx, sigs, l, spec.Needs()); err != nil {
		return err
	}
	defer l.close()
	inLine := func(spec lockSpec) func(context.Context) (acquired, error) {
		return func(ctx context.Context) (acquired, error) {
			return waitInLine(ctx, l, func(ctx context.Context, s *store.Store) (acquired, error) { return lockAll(ctx, s, names, spec) })
		}
	}
	free := spec // free: free locks are taken whatever --timeout
	free.try = true
	h, err := waitForFree(ctx, sigs, timeout, inLine(free), inLine(spec))
	if err != nil {
		if spec.try && errors.Is(err, baton.ErrLocked) {
			return exitWith(exitTimeout, fmt.Errorf("lock %s: not all free (--try): %w", what, err))
		}
		if isTimeout(err) {
			return exitWith(exitTimeout, fmt.Errorf("lock %s: not acquired within %v", what, timeout))
		}
		return wrapExit(err, "lock %s", what)
	}
	defer h.unlock()
	l.held(h.lease)
	var tokens []string
	for _, t := range h.lease.Tokens() {
		tokens = append(tokens, strconv.FormatInt(t, 10))
	}
	env := []string{"BATON_LOCK=" + h.names, "BATON_TOKEN=" + strconv.FormatInt(h.lease.Token(), 10), "BATON_TOKENS=" + strings.Join(tokens, " ")}
	return m.runHeld(sigs, h.lease, "lock "+h.names, env, argv, stop)
}

// lockAll takes every name on s as one baton.MultiLock, each as spec
// says; with spec.try, only if every name is free.
func lockAll(ctx context.Context, s *store.Store, names []string, spec lockSpec) (acquired, error) {
	ls := make([]baton.Locker, len(names))
	for i, n := range names {
		lk, err := s.Locker(n, spec.LockSpec)
		if err != nil {
			return acquired{}, err
		}
		ls[i] = lk
	}
	ml := baton.NewMultiLock(ls...)
	take := ml.Lock
	if spec.try {
		take = ml.TryLock
	}
	l, err := take(ctx)
	if err != nil {
		return acquired{}, err
	}
	h := acquired{lease: l, release: ml.Unlock}
	// BATON_LOCK has the names as given, in lock order (a ZooKeeper
	// part's Name has the "/" its NAME may lack).
	given := map[string]string{}
	for _, n := range names {
		given[backend.AbsolutePath(n)] = n
	}
	for _, n := range names {
		given[n] = n // on etcd and Redis "a" and "/a" are both given
	}
	order := ml.Names()
	for i, n := range order {
		if g, ok := given[n]; ok {
			order[i] = g
		}
	}
	h.names = strings.Join(order, " ")
	return h, nil
}
