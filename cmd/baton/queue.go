package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
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
	qa, err := m.parseQueue(v, args)
	if err != nil {
		return err
	}
	if v == "take" {
		return m.queueTake(ctx, &qa.sf, qa.name, qa.kind, qa.timeout, qa.retry, qa.end)
	}
	sigs, s, done, err := m.openVerb(ctx, &qa.sf, "queue")
	if err != nil {
		return err
	}
	defer done()
	if v == "len" {
		return m.queueLen(ctx, sigs, s.Session, &qa.sf, qa.name, qa.kind)
	}
	return m.queuePut(ctx, sigs, qa.kind.open(s.Session, qa.name), qa.name, qa.values)
}

// queueSynopses are the queue verbs' usage texts.
var queueSynopses = map[string]string{
	"put": "queue put [--store URL] [--priority N | --delay D] NAME [VALUE…]   (no VALUE: one item per line of stdin)",
	"take": "queue take [--store URL] [--ttl 10s] [--priority | --delay] [--timeout D] [--retry D] [--raw | -0] NAME\n\n" +
		"Claims the first item, writes it to stdout and only then removes it from the queue: if the\n" +
		"write fails (a full disk, a closed pipe) the item stays in the queue, and if baton dies\n" +
		"before removing it, the item goes back once its session ends (at least once). A queue that\n" +
		"holds items of another kind only (--priority, --delay, or none of these) is refused (exit 2).\n" +
		"SIGINT, SIGTERM or SIGHUP while it waits, or while it writes (to a reader that does not\n" +
		"read), ends it with 128+n, the item left in the queue.",
	"len": "queue len [--store URL] [--priority | --delay] NAME   (items of the other kinds: on stderr)",
}

// queueArgs are a queue verb's flags and arguments.
type queueArgs struct {
	sf      storeFlags
	kind    queueKind
	timeout time.Duration // take
	retry   time.Duration // take
	end     []byte        // take: what follows the item on stdout
	name    string
	values  []string // put: the items (none: stdin's lines)
}

// parseQueue parses the arguments of queue verb v.
func (m *Main) parseQueue(v string, args []string) (*queueArgs, error) {
	qa := &queueArgs{}
	fs := m.newFlags("queue "+v, queueSynopses[v], &qa.sf, v == "take")
	addQueueKindFlags(fs, v, &qa.kind)
	timeout := fs.Duration("timeout", 0, "take: give up (exit 75) if no item within this long; 0 waits forever")
	var retry *time.Duration
	if v == "take" {
		retry = fs.Duration("retry", defaultRetry, "after losing the session while waiting (a store outage), open a new one and wait again, as long as failures have not gone on this long in a row; 0: exit 1 at once")
	}
	raw := fs.Bool("raw", false, "take: print the item's bytes as they are, with no newline after")
	nul := fs.Bool("0", false, "take: end the item with a NUL byte instead of a newline (for values with newlines)")
	pos, rest, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	pos = append(pos, rest...)
	if *raw && *nul {
		return nil, usageErr("queue take: --raw and -0 exclude each other")
	}
	if qa.kind.pri && qa.kind.del {
		return nil, usageErr("queue %s: --priority and --delay exclude each other", v)
	}
	if len(pos) == 0 {
		return nil, usageErr("queue %s: missing NAME", v)
	}
	if qa.name, err = cleanName(pos[0]); err != nil {
		return nil, err
	}
	qa.sf.name = qa.name
	if v != "put" && len(pos) > 1 {
		return nil, usageErr("queue %s: unexpected arguments after NAME", v)
	}
	qa.values, qa.timeout = pos[1:], *timeout
	if v == "take" {
		qa.retry, qa.end = *retry, []byte("\n")
		switch {
		case *raw:
			qa.end = nil
		case *nul:
			qa.end = []byte{0}
		}
	}
	return qa, nil
}

// addQueueKindFlags adds --priority and --delay to fs: with put a
// priority N and a delay D, with the other verbs which queue to use.
func addQueueKindFlags(fs *flagSet, v string, kind *queueKind) {
	if v != "put" {
		fs.BoolVar(&kind.pri, "priority", false, v+": the priority queue NAME (lowest priority number first)")
		fs.BoolVar(&kind.del, "delay", false, v+": the delay queue NAME (only items whose delay has passed)")
		return
	}
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
}

// queuePut puts values on q, or with none the lines of stdin.
func (m *Main) queuePut(ctx context.Context, sigs *signals, q queueOps, name string, values []string) error {
	if len(values) == 0 {
		var err error
		if values, err = m.stdinLines(); err != nil {
			return err
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
}

// stdinLines are the lines of stdin, each an item of at most 1 MiB.
func (m *Main) stdinLines() ([]string, error) {
	var values []string
	sc := bufio.NewScanner(m.Stdin)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		values = append(values, sc.Text())
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("queue put: a line of stdin is over 1 MiB, the most one item may hold")
	} else if err != nil {
		return nil, fmt.Errorf("queue put: read stdin: %w", err)
	}
	return values, nil
}

// queueLen prints the number of items of kind on name, and says on
// stderr which items of the other kinds name holds: a priority item is
// no FIFO item, and a plain `queue len` of a priority queue would
// otherwise say 0 of a queue that is not empty.
func (m *Main) queueLen(ctx context.Context, sigs *signals, s *baton.Session, sf *storeFlags, name string, kind queueKind) error {
	n, err := waitFor(ctx, sigs, sf.dial, func(ctx context.Context) (queueCounts, error) { return countItems(ctx, s, name) })
	if err != nil {
		return wrapExit(err, "queue len %s", name)
	}
	if _, err := fmt.Fprintln(m.Stdout, n[kind.index()]); err != nil {
		return err
	}
	if other := n.others(kind); other != "" {
		fmt.Fprintf(m.Stderr, "baton: queue len %s: %s not counted\n", name, other)
	}
	return nil
}

// queueKind is which queue on NAME a queue verb works on, and for put the
// item's priority or delay.
type queueKind struct {
	pri, del bool
	priority int32
	delay    time.Duration
}

// The kinds of queue items, as queueKind.index numbers them.
const (
	fifoItems = iota
	priorityItems
	delayItems
)

func (k queueKind) index() int {
	switch {
	case k.pri:
		return priorityItems
	case k.del:
		return delayItems
	}
	return fifoItems
}

// queueOps is what the queue verbs do, on any of the queues.
type queueOps struct {
	Put          func(ctx context.Context, data []byte) error
	Claim        func(ctx context.Context) (*baton.Item, error)
	Ack, Release func(ctx context.Context, it *baton.Item) error
}

func (k queueKind) open(s *baton.Session, name string) queueOps {
	switch {
	case k.pri:
		q := baton.NewPriorityQueue(s, name)
		return queueOps{func(ctx context.Context, d []byte) error { return q.Put(ctx, d, k.priority) }, q.Claim, q.Ack, q.Release}
	case k.del:
		q := baton.NewDelayQueue(s, name)
		return queueOps{func(ctx context.Context, d []byte) error { return q.Put(ctx, d, k.delay) }, q.Claim, q.Ack, q.Release}
	}
	q := baton.NewQueue(s, name)
	return queueOps{q.Put, q.Claim, q.Ack, q.Release}
}

// queueCounts counts a name's queue items by kind (fifoItems, …).
type queueCounts [3]int

// countItems lists name once and counts its items of each kind, claimed
// or not, due or not.
func countItems(ctx context.Context, s *baton.Session, name string) (queueCounts, error) {
	var n queueCounts
	kids, err := s.Conn().Children(ctx, name)
	if err != nil {
		return n, err
	}
	for _, k := range kids {
		_, pri := backend.ParsePriorityKind(k.Kind)
		_, _, del := backend.ParseDelayKind(k.Kind)
		switch {
		case k.Kind == backend.KindQueue:
			n[fifoItems]++
		case pri:
			n[priorityItems]++
		case del:
			n[delayItems]++
		}
	}
	return n, nil
}

// others says which items of kinds other than k there are, and the flags
// that reach them ("1 priority item (--priority)"), or "".
func (n queueCounts) others(k queueKind) string {
	var s string
	for i, what := range [...]struct{ kind, flag string }{{"FIFO", "no --priority or --delay"}, {"priority", "--priority"}, {"delay", "--delay"}} {
		if i == k.index() || n[i] == 0 {
			continue
		}
		if s != "" {
			s += " and "
		}
		s += fmt.Sprintf("%d %s item%s (%s)", n[i], what.kind, map[bool]string{true: "s"}[n[i] != 1], what.flag)
	}
	return s
}
