package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// eventLog is the demo's shared log: one line per event, appended with a
// single write to an O_APPEND file, so the file's order is the order in
// which the events happened across all worker processes.
type eventLog struct {
	f  *os.File
	id string
}

func openEventLog(path, id string) (*eventLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &eventLog{f: f, id: id}, nil
}

// add appends "<unix nanos> <id> <event> <arg>".
func (l *eventLog) add(event, arg string) error {
	_, err := fmt.Fprintf(l.f, "%d %s %s %s\n", time.Now().UnixNano(), l.id, event, arg)
	return err
}

// worker is the hidden `baton worker ROLE` the demo runs as separate
// processes: lock, elect, barrier or queue.
func (m *Main) worker(ctx context.Context, args []string) error {
	role, args, err := m.verb("worker", args, "lock", "elect", "barrier", "queue")
	if err != nil {
		return err
	}
	var sf storeFlags
	fs := m.newFlags("worker "+role, "worker ROLE [flags] (used by baton demo)", &sf, true)
	name := fs.String("name", "", "recipe name")
	id := fs.String("id", "", "worker id for the log")
	logPath := fs.String("log", "", "event log file")
	rounds := fs.Int("rounds", 1, "lock: acquisitions")
	holdFor := fs.Duration("hold", 20*time.Millisecond, "lock: time held; barrier: time between enter and leave")
	delay := fs.Duration("delay", 0, "barrier: wait this long before arriving")
	n := fs.Int("n", 1, "barrier: participants")
	if _, _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if *name == "" || *id == "" || *logPath == "" {
		return usageErr("worker: --name, --id and --log are required")
	}
	log, err := openEventLog(*logPath, *id)
	if err != nil {
		return err
	}
	defer log.f.Close()
	sigs, s, done, err := m.openVerb(ctx, &sf, "demo")
	if err != nil {
		return err
	}
	defer done()
	w := &demoWorker{s: s.Session, name: *name, log: log, sigs: sigs}
	switch role {
	case "lock":
		err = w.lock(ctx, *rounds, *holdFor)
	case "elect":
		err = w.elect(ctx)
	case "barrier":
		err = w.barrier(ctx, *n, *delay, *holdFor)
	default:
		err = w.queue(ctx)
	}
	if err == nil {
		if wc, ok := s.Session.Conn().(backend.WatchCounter); ok {
			err = log.add("watch-events", strconv.FormatInt(wc.WatchEvents(), 10))
		}
	}
	return err
}

type demoWorker struct {
	s    *baton.Session
	name string
	log  *eventLog
	sigs *signals
}

// do runs f, cancelled by a signal.
func (w *demoWorker) do(ctx context.Context, f func(context.Context) error) error {
	_, err := waitFor(ctx, w.sigs, 0, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
	return err
}

// lock waits at the start barrier NAME-start (so that every worker
// contends from the first round), then acquires and releases NAME rounds
// times.
func (w *demoWorker) lock(ctx context.Context, rounds int, hold time.Duration) error {
	if err := w.log.add("ready", "-"); err != nil {
		return err
	}
	if err := w.do(ctx, baton.NewBarrier(w.s, w.name+"-start").Wait); err != nil {
		return err
	}
	// Count only the lock's watch notifications, not the start barrier's.
	if wc, ok := w.s.Conn().(backend.WatchCounter); ok {
		if err := w.log.add("watch-base", strconv.FormatInt(wc.WatchEvents(), 10)); err != nil {
			return err
		}
	}
	mu := baton.NewMutex(w.s, w.name)
	for range rounds {
		l, err := waitFor(ctx, w.sigs, 0, mu.Lock)
		if err != nil {
			return err
		}
		tok := strconv.FormatInt(l.Token(), 10)
		if err := w.log.add("acquire", tok); err != nil {
			return err
		}
		time.Sleep(hold) // the critical section's "work"
		if err := w.log.add("release", tok); err != nil {
			return err
		}
		if err := mu.Unlock(ctx); err != nil {
			return err
		}
	}
	return nil
}

// elect campaigns, logs its leadership and leads until a signal (then it
// resigns) or until it is killed, which is what the demo does to it.
func (w *demoWorker) elect(ctx context.Context) error {
	e := baton.NewElection(w.s, w.name)
	err := w.do(ctx, func(ctx context.Context) error { return e.Campaign(ctx, []byte(w.log.id)) })
	var ee *exitError
	if errors.As(err, &ee) && ee.Err == nil {
		return nil // stopped by the demo while still a candidate
	}
	if err != nil {
		return err
	}
	l := e.Lease()
	if err := w.log.add("leader", strconv.FormatInt(l.Token(), 10)); err != nil {
		return err
	}
	select {
	case <-w.sigs.c:
	case <-l.Done():
		return l.Err()
	}
	rctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	return e.Resign(rctx)
}

func (w *demoWorker) barrier(ctx context.Context, n int, delay, work time.Duration) error {
	time.Sleep(delay) // stagger the arrivals so the barrier has work to do
	d := baton.NewDoubleBarrier(w.s, w.name, n)
	steps := []struct {
		before, after string
		f             func(context.Context) error
	}{{"arrive", "enter", d.Enter}, {"finish", "left", d.Leave}}
	for i, st := range steps {
		if i == 1 {
			time.Sleep(work)
		}
		if err := w.log.add(st.before, "-"); err != nil {
			return err
		}
		if err := w.do(ctx, st.f); err != nil {
			return err
		}
		if err := w.log.add(st.after, "-"); err != nil {
			return err
		}
	}
	return nil
}

// queue takes items until the queue is empty.
func (w *demoWorker) queue(ctx context.Context) error {
	q := baton.NewQueue(w.s, w.name)
	for {
		item, err := waitFor(ctx, w.sigs, 0, q.Poll)
		if errors.Is(err, baton.ErrEmpty) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := w.log.add("take", string(item)); err != nil {
			return err
		}
	}
}
