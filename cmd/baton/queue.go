package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton"
)

// queue is `baton queue put [--priority N | --delay D] NAME VALUE…`,
// `baton queue take [--priority | --delay] [--timeout D] NAME` and `baton
// queue len [--priority | --delay] NAME`. --priority and --delay choose the
// PriorityQueue and DelayQueue on NAME instead of the FIFO Queue.
func (m *Main) queue(ctx context.Context, args []string) error {
	v, args, err := m.verb("queue", args, "put", "take", "len")
	if err != nil {
		return err
	}
	var sf storeFlags
	var fs = m.newFlags("queue "+v, map[string]string{
		"put":  "queue put [--store URL] [--priority N | --delay D] NAME [VALUE…]   (no VALUE: one item per line of stdin)",
		"take": "queue take [--store URL] [--priority | --delay] [--timeout D] [--raw | -0] NAME",
		"len":  "queue len [--store URL] [--priority | --delay] NAME",
	}[v], &sf, false)
	var kind queueKind
	if v == "put" {
		fs.Func("priority", "put into the priority queue NAME with priority `N` (a 32-bit integer, 0 to 99999 on etcd, whose layout is etcd's recipes' (others exit 2); lower comes out first)", func(s string) error {
			p, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return fmt.Errorf("want a 32-bit integer")
			}
			kind.priority, kind.pri = int32(p), true
			return nil
		})
		fs.Func("delay", "put into the delay queue NAME, to be taken no earlier than `D` from now (e.g. 30s, 5m)", func(s string) error {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				return fmt.Errorf("want a duration ≥ 0")
			}
			kind.delay, kind.del = d, true
			return nil
		})
	} else {
		fs.BoolVar(&kind.pri, "priority", false, v+": the priority queue NAME (lowest priority number first)")
		fs.BoolVar(&kind.del, "delay", false, v+": the delay queue NAME (only items whose delay has passed)")
	}
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
	if kind.pri && kind.del {
		return usageErr("queue %s: --priority and --delay exclude each other", v)
	}
	if len(pos) == 0 {
		return usageErr("queue %s: missing NAME", v)
	}
	name, err := cleanName(pos[0])
	if err != nil {
		return err
	}
	sf.name = name
	if v != "put" && len(pos) > 1 {
		return usageErr("queue %s: unexpected arguments after NAME", v)
	}
	sigs, s, done, err := m.openVerb(ctx, &sf, "queue")
	if err != nil {
		return err
	}
	defer done()
	q := kind.open(s.Session, name)
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
			if errors.Is(err, baton.ErrInvalidPriority) {
				return exitWith(exitUsage, fmt.Errorf("queue put %s: %w", name, err))
			}
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

// queueKind is which queue on NAME a queue verb works on, and for put the
// item's priority or delay.
type queueKind struct {
	pri, del bool
	priority int32
	delay    time.Duration
}

// queueOps is what the queue verbs do, on any of the queues.
type queueOps struct {
	Put  func(ctx context.Context, data []byte) error
	Take func(ctx context.Context) ([]byte, error)
	Len  func(ctx context.Context) (int, error)
}

func (k queueKind) open(s *baton.Session, name string) queueOps {
	switch {
	case k.pri:
		q := baton.NewPriorityQueue(s, name)
		return queueOps{func(ctx context.Context, d []byte) error { return q.Put(ctx, d, k.priority) }, q.Take, q.Len}
	case k.del:
		q := baton.NewDelayQueue(s, name)
		return queueOps{func(ctx context.Context, d []byte) error { return q.Put(ctx, d, k.delay) }, q.Take, q.Len}
	}
	q := baton.NewQueue(s, name)
	return queueOps{q.Put, q.Take, q.Len}
}
