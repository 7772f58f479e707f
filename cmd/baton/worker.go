package main

import (
	"context"
	"strconv"
	"time"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/cmd/baton/internal/demo"
)

// worker is the hidden `baton worker ROLE` the demo runs as separate
// processes: lock, elect, barrier or queue (see internal/demo).
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
	log, err := demo.OpenEventLog(*logPath, *id)
	if err != nil {
		return err
	}
	defer log.Close()
	sigs, s, done, err := m.openVerb(ctx, &sf, "demo")
	if err != nil {
		return err
	}
	defer done()
	w := &demo.Worker{Session: s.Session, Name: *name, Log: log, Signals: sigs.c,
		Do: func(ctx context.Context, f func(context.Context) error) error {
			_, err := waitFor(ctx, sigs, 0, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
			return err
		}}
	switch role {
	case "lock":
		err = w.Lock(ctx, *rounds, *holdFor)
	case "elect":
		err = w.Elect(ctx)
	case "barrier":
		err = w.Barrier(ctx, *n, *delay, *holdFor)
	default:
		err = w.Queue(ctx)
	}
	if err == nil {
		if wc, ok := s.Session.Conn().(backend.WatchCounter); ok {
			err = log.Add("watch-events", strconv.FormatInt(wc.WatchEvents(), 10))
		}
	}
	return err
}
