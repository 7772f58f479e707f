package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/codec"
)

// counter is `baton counter get|set|add NAME [V]`: the counter in node
// NAME, in Curator's layouts: a DistributedAtomicLong (8-byte big-endian
// long) by default, a SharedCount (4-byte big-endian int) with --int32.
// get reads either (by the data's length; a missing node is 0); set and
// add print the value after.
func (m *Main) counter(ctx context.Context, args []string) error {
	v, args, err := m.verb("counter", args, "get", "set", "add")
	if err != nil {
		return err
	}
	var sf storeFlags
	fs := m.newFlags("counter "+v, map[string]string{
		"get": "counter get [--store URL] NAME          print the count (a missing counter is 0)",
		"set": "counter set [--store URL] [--int32] [--lock LOCKNAME] NAME V   set the count, whatever it is",
		"add": "counter add [--store URL] [--int32] [--lock LOCKNAME] NAME D   add D atomically; print the count after",
	}[v], &sf, false)
	int32s := fs.Bool("int32", false, "set, add: the counter is a Curator SharedCount (4-byte int), not a DistributedAtomicLong (8-byte long)")
	lock := fs.String("lock", "", "add, and set of a long counter: when optimistic tries keep colliding, take turns holding this lock (Curator's PromotedToLock path; default NAME.lock), so that contention alone never fails")
	if k := len(args) - 1; k >= 0 && len(args[k]) > 1 && args[k][0] == '-' && strings.Trim(args[k][1:], "0123456789") == "" {
		// A negative number last is V, not a flag.
		args = append(args[:k:k], "--", args[k])
	}
	pos, rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	pos = append(pos, rest...)
	want := map[string]int{"get": 1, "set": 2, "add": 2}[v]
	if len(pos) != want {
		return usageErr("counter %s: want NAME%s", v, map[bool]string{true: " and a number", false: ""}[want == 2])
	}
	name, err := cleanName(pos[0]) // as written: get reads the node itself (ZooKeeper adds the /)
	if err != nil {
		return err
	}
	sf.name = name
	var n int64
	if want == 2 {
		bits := 64
		if *int32s {
			bits = 32
		}
		if n, err = strconv.ParseInt(pos[1], 10, bits); err != nil {
			return usageErr("counter %s: %q is not a %d-bit integer", v, pos[1], bits)
		}
	}
	if *lock != "" && (v == "get" || v == "set" && *int32s) {
		return usageErr("counter: --lock goes with add, or set of a long counter")
	}
	sigs, s, done, err := m.openVerb(ctx, &sf, "counter")
	if err != nil {
		return err
	}
	defer done()
	out, err := waitFor(ctx, sigs, 0, func(ctx context.Context) (int64, error) {
		var opts []baton.AtomicLongOption
		if *lock != "" {
			opts = append(opts, baton.PromotedToLock(*lock))
		}
		a := baton.NewAtomicLong(s.Session, name, opts...)
		switch {
		case v == "get":
			return readCounter(ctx, s.Session, name)
		case *int32s:
			return updateCount(ctx, s.Session, name, a.LockName(), v == "add", int32(n))
		}
		if v == "set" {
			_, err := a.Set(ctx, n)
			return n, err
		}
		_, post, err := a.Add(ctx, n)
		return post, err
	})
	if err != nil {
		return wrapExit(err, "counter %s %s", v, name)
	}
	fmt.Fprintln(m.Stdout, out)
	return nil
}

// readCounter reads either layout: 4 bytes a SharedCount, 0 or 8 an
// AtomicLong; a missing node is 0.
func readCounter(ctx context.Context, s *baton.Session, name string) (int64, error) {
	data, _, err := s.Conn().Get(ctx, name)
	if errors.Is(err, baton.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(data) == 4 {
		c, err := codec.ParseCount(data)
		return int64(c), err
	}
	return codec.ParseLong(data)
}

// updateCount sets the SharedCount name to n, or adds n to it by
// versioned writes: a few optimistic tries, then, as AtomicLong does,
// turns on the promoted lock lock, so that contention alone does not fail
// the add. It returns the count after.
func updateCount(ctx context.Context, s *baton.Session, name, lock string, add bool, n int32) (int64, error) {
	c := baton.NewSharedCount(s, name, 0)
	if !add {
		return int64(n), c.Set(ctx, n)
	}
	try := func() (int64, bool, error) {
		cur, err := c.Get(ctx)
		if err != nil {
			return 0, false, err
		}
		ok, err := c.TrySet(ctx, cur, cur.Value+n)
		return int64(cur.Value + n), ok, err
	}
	for range optimisticTries {
		if v, ok, err := try(); err != nil || ok {
			return v, err
		}
	}
	m := baton.NewMutex(s, lock)
	if _, err := m.Lock(ctx); err != nil {
		return 0, err
	}
	defer func() { _ = m.Unlock(context.WithoutCancel(ctx)) }()
	// Holding the lock, only writers still on their optimistic tries beat
	// us, each once. The bound is for a node whose version can no longer
	// be checked (ZooKeeper's -1, after 2^32-1 writes).
	for range lockedTries {
		if v, ok, err := try(); err != nil || ok {
			return v, err
		}
	}
	return 0, fmt.Errorf("%w: %d tries collided, %d of them holding %s", baton.ErrConflict, optimisticTries+lockedTries, lockedTries, lock)
}

// The tries of a SharedCount add: before taking the promoted lock, and
// holding it.
const optimisticTries, lockedTries = 10, 1000
