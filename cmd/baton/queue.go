package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton"
)

// queue is `baton queue put NAME VALUE…`, `baton queue take [--timeout D]
// NAME` and `baton queue len NAME`.
func (m *Main) queue(ctx context.Context, args []string) error {
	v, args, err := m.verb("queue", args, "put", "take", "len")
	if err != nil {
		return err
	}
	var sf storeFlags
	var fs = m.newFlags("queue "+v, map[string]string{
		"put":  "queue put [--store URL] NAME [VALUE…]   (no VALUE: one item per line of stdin)",
		"take": "queue take [--store URL] [--timeout D] [--raw | -0] NAME",
		"len":  "queue len [--store URL] NAME",
	}[v], &sf, false)
	timeout := fs.Duration("timeout", 0, "take: give up (exit 75) if no item within this long; 0 waits forever")
	raw := fs.Bool("raw", false, "take: print the item's bytes as they are, with no newline after")
	nul := fs.Bool("0", false, "take: end the item with a NUL byte instead of a newline (for values with newlines)")
	pos, rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	pos = append(pos, rest...)
	if *raw && *nul {
		return usageErr("queue take: --raw and -0 exclude each other")
	}
	if len(pos) == 0 {
		return usageErr("queue %s: missing NAME", v)
	}
	name := pos[0]
	if err := checkName(name); err != nil {
		return err
	}
	sf.name = name
	if v != "put" && len(pos) > 1 {
		return usageErr("queue %s: unexpected arguments after NAME", v)
	}
	sigs := catchSignals()
	defer sigs.stop()
	s, err := m.openFor(ctx, sigs, &sf, "queue")
	if err != nil {
		return err
	}
	defer closeStore(s)
	q := baton.NewQueue(s.Session, name)
	switch v {
	case "put":
		values := pos[1:]
		if len(values) == 0 {
			sc := bufio.NewScanner(m.Stdin)
			sc.Buffer(make([]byte, 64*1024), 1<<20)
			for sc.Scan() {
				values = append(values, sc.Text())
			}
			if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
				return fmt.Errorf("queue put: a line of stdin is over 1 MiB, the most one item may hold")
			} else if err != nil {
				return fmt.Errorf("queue put: read stdin: %w", err)
			}
		}
		for _, val := range values {
			_, err := waitFor(ctx, sigs, 0, func(ctx context.Context) (struct{}, error) {
				return struct{}{}, q.Put(ctx, []byte(val))
			})
			if err != nil {
				return wrapExit(err, "queue put %s", name)
			}
		}
		return nil
	case "take":
		item, err := waitFor(ctx, sigs, *timeout, q.Take)
		if err != nil {
			if isTimeout(err) {
				return exitWith(exitTimeout, fmt.Errorf("queue take %s: no item within %v", name, *timeout))
			}
			return wrapExit(err, "queue take %s", name)
		}
		switch {
		case *raw:
		case *nul:
			item = append(item, 0)
		default:
			item = append(item, '\n')
		}
		_, err = m.Stdout.Write(item)
		return err
	default:
		n, err := waitFor(ctx, sigs, sf.dial, q.Len)
		if err != nil {
			return wrapExit(err, "queue len %s", name)
		}
		_, err = fmt.Fprintln(m.Stdout, n)
		return err
	}
}
