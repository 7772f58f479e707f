package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/cmd/baton/internal/exit"
)

// EventLog is the demo's shared log: one line per event, appended with a
// single write to an O_APPEND file, so the file's order is the order in
// which the events happened across all worker processes.
type EventLog struct {
	f  *os.File
	id string
}

// OpenEventLog opens the log at path for worker id, to append to.
func OpenEventLog(path, id string) (*EventLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &EventLog{f: f, id: id}, nil
}

// Close closes the log.
func (l *EventLog) Close() error { return l.f.Close() }

// Add appends "<unix nanos> <id> <event> <arg>".
func (l *EventLog) Add(event, arg string) error {
	_, err := fmt.Fprintf(l.f, "%d %s %s %s\n", time.Now().UnixNano(), l.id, event, arg)
	return err
}

// Worker is one worker process's part in the demo (baton's hidden
// `worker ROLE`): it works on the recipe Name and logs what it does.
type Worker struct {
	Session *baton.Session
	Name    string
	Log     *EventLog
	// Do runs f under the command's signals: one cancels f and is its
	// error, an *exit.Error without a message.
	Do func(ctx context.Context, f func(context.Context) error) error
	// Signals are the command's caught signals: a leader leads until one.
	Signals <-chan os.Signal
}

// resignTimeout bounds a leader's resignation.
const resignTimeout = 5 * time.Second

// Lock waits at the start barrier NAME-start (so that every worker
// contends from the first round), then acquires and releases NAME rounds
// times.
func (w *Worker) Lock(ctx context.Context, rounds int, hold time.Duration) error {
	if err := w.Log.Add("ready", "-"); err != nil {
		return err
	}
	if err := w.Do(ctx, baton.NewBarrier(w.Session, w.Name+"-start").Wait); err != nil {
		return err
	}
	// Count only the lock's watch notifications, not the start barrier's.
	if wc, ok := w.Session.Conn().(backend.WatchCounter); ok {
		if err := w.Log.Add("watch-base", strconv.FormatInt(wc.WatchEvents(), 10)); err != nil {
			return err
		}
	}
	mu := baton.NewMutex(w.Session, w.Name)
	for range rounds {
		var l *baton.Lease
		err := w.Do(ctx, func(ctx context.Context) (err error) {
			l, err = mu.Lock(ctx)
			return err
		})
		if err != nil {
			return err
		}
		tok := strconv.FormatInt(l.Token(), 10)
		if err := w.Log.Add("acquire", tok); err != nil {
			return err
		}
		time.Sleep(hold) // the critical section's "work"
		if err := w.Log.Add("release", tok); err != nil {
			return err
		}
		if err := mu.Unlock(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Elect campaigns, logs its leadership and leads until a signal (then it
// resigns) or until it is killed, which is what the demo does to it.
func (w *Worker) Elect(ctx context.Context) error {
	e := baton.NewElection(w.Session, w.Name)
	err := w.Do(ctx, func(ctx context.Context) error { return e.Campaign(ctx, []byte(w.Log.id)) })
	var ee *exit.Error
	if errors.As(err, &ee) && ee.Err == nil {
		return nil // stopped by the demo while still a candidate
	}
	if err != nil {
		return err
	}
	l := e.Lease()
	if err := w.Log.Add("leader", strconv.FormatInt(l.Token(), 10)); err != nil {
		return err
	}
	select {
	case <-w.Signals:
	case <-l.Done():
		return l.Err()
	}
	rctx, cancel := context.WithTimeout(context.Background(), resignTimeout)
	defer cancel()
	return e.Resign(rctx)
}

// Barrier arrives at the double barrier of n after delay, enters, works
// for work and leaves.
func (w *Worker) Barrier(ctx context.Context, n int, delay, work time.Duration) error {
	time.Sleep(delay) // stagger the arrivals so the barrier has work to do
	d := baton.NewDoubleBarrier(w.Session, w.Name, n)
	steps := []struct {
		before, after string
		f             func(context.Context) error
	}{{"arrive", "enter", d.Enter}, {"finish", "left", d.Leave}}
	for i, st := range steps {
		if i == 1 {
			time.Sleep(work)
		}
		if err := w.Log.Add(st.before, "-"); err != nil {
			return err
		}
		if err := w.Do(ctx, st.f); err != nil {
			return err
		}
		if err := w.Log.Add(st.after, "-"); err != nil {
			return err
		}
	}
	return nil
}

// Queue takes items until the queue is empty.
func (w *Worker) Queue(ctx context.Context) error {
	q := baton.NewQueue(w.Session, w.Name)
	for {
		var item []byte
		err := w.Do(ctx, func(ctx context.Context) (err error) {
			item, err = q.Poll(ctx)
			return err
		})
		if errors.Is(err, baton.ErrEmpty) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := w.Log.Add("take", string(item)); err != nil {
			return err
		}
	}
}
