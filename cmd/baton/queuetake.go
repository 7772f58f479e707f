package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/store"
)

// claimed is an item `queue take` has claimed, with its queue.
type claimed struct {
	q  queueOps
	it *baton.Item
}

// queueTake is `baton queue take`: it claims the first item of kind on
// name (waiting as long as timeout allows, and opening a new session and
// waiting again after a loss, as `lock` waiters rejoin their line),
// writes it to stdout followed by end, and only then removes it from
// the queue. An item whose write fails stays in the queue, and so does
// one whose write a signal interrupts (exit 128+n, as a signal while
// waiting): see deliver.
func (m *Main) queueTake(ctx context.Context, sf *storeFlags, name string, kind queueKind, timeout, retry time.Duration, end []byte) error {
	sigs := catchSignals()
	defer sigs.stop()
	l := &line{sf: sf, what: "queue take " + name, retry: retry}
	if err := m.openLine(ctx, sigs, l, "queue"); err != nil {
		return err
	}
	defer l.close()
	c, err := waitFor(ctx, sigs, timeout, func(ctx context.Context) (claimed, error) {
		return waitInLine(ctx, l, func(ctx context.Context, s *store.Store) (claimed, error) {
			return claimItem(ctx, s.Session, name, kind)
		})
	})
	if err != nil {
		if isTimeout(err) {
			return exitWith(exitTimeout, fmt.Errorf("queue take %s: no item within %v", name, timeout))
		}
		return wrapExit(err, "queue take %s", name)
	}
	return m.deliver(sigs, name, c, end)
}

// claimItem claims the first item of kind on name. A name that holds no
// item of kind but items of another kind is refused at once (exit 2)
// rather than waited on: `queue put --priority` and a plain `queue take`
// are two queues on one name, and the take would wait for an item that
// never comes while the queue it means is not empty.
func claimItem(ctx context.Context, s *baton.Session, name string, kind queueKind) (claimed, error) {
	n, err := countItems(ctx, s, name)
	if err != nil {
		return claimed{}, err
	}
	if other := n.others(kind); n[kind.index()] == 0 && other != "" {
		return claimed{}, usageErr("%s holds no %s items, but %s", name, [...]string{"FIFO", "priority", "delay"}[kind.index()], other)
	}
	q := kind.open(s, name)
	it, err := q.Claim(ctx)
	return claimed{q, it}, err
}

// deliver writes the claimed item and its end to stdout, flushes it, and
// only then acknowledges it (removes it from the queue). If the write
// fails (a full disk, a reader that closed the pipe: SIGPIPE is caught
// meanwhile, so the write returns EPIPE instead of killing baton), the
// claim is released and the item stays in the queue for the next
// consumer.
//
// A caught signal (SIGINT, SIGTERM, SIGHUP) gives the delivery up: the
// write runs in a goroutine of its own, as a write to a pipe whose reader
// does not read blocks for as long as it does not (a pipe's file
// descriptor is blocking: no write deadline applies to it), and deliver
// returns at the signal, leaving it blocked until baton exits. The claim
// is released, bounded by cleanupTimeout and cut short by another signal
// (failing that it goes with the session as baton exits), the item is
// not acknowledged, and the exit status is the signal's (128+n), as for a
// signal while waiting. The reader may have got part of the item. Which
// of a write that returns and a signal comes first is decided once, when
// the write has returned: a signal caught by then (queued on sigs, even
// while the write was returning) wins and the item is given back, though
// it may have been written whole (at least once); a signal caught after
// that is too late: the acknowledgement is sent (bounded by
// cleanupTimeout), and baton exits as it went, 0 if it did. A signal
// caught before deliver starts (between the claim and the write) gives
// the item back unwritten.
func (m *Main) deliver(sigs *signals, name string, c claimed, end []byte) error {
	select {
	case sig := <-sigs.c:
		return giveBack(sigs, name, c, sig)
	default:
	}
	wrote := make(chan error, 1)
	b := append(c.it.Data, end...)
	go func() { wrote <- writeFlushed(m.Stdout, b) }()
	var werr error
	select {
	case sig := <-sigs.c:
		return giveBack(sigs, name, c, sig)
	case werr = <-wrote:
	}
	select {
	case sig := <-sigs.c:
		return giveBack(sigs, name, c, sig)
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if werr != nil {
		if rerr := c.q.Release(ctx, c.it); rerr != nil {
			// The claim goes with our session, when baton exits.
			return fmt.Errorf("queue take %s: %w (the item was not taken: it goes back to the queue as baton exits; giving it back now failed: %v)", name, werr, rerr)
		}
		return fmt.Errorf("queue take %s: %w (the item was not taken: it stays in the queue)", name, werr)
	}
	err := c.q.Ack(ctx, c.it)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, baton.ErrRevoked):
		return fmt.Errorf("queue take %s: the item was written, but a consumer that does not honour claims took it too: %w", name, err)
	}
	return fmt.Errorf("queue take %s: the item was written but not removed from the queue, and may be delivered again: %w", name, err)
}

// giveBack releases c's claim after the signal sig gave its delivery up,
// and returns sig's exit status (128+n) with a line saying where the item
// is. The release is bounded by cleanupTimeout and cut short by another
// signal.
func giveBack(sigs *signals, name string, c claimed, sig os.Signal) error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	ctx, stop := sigs.cancelling(ctx)
	defer stop()
	if rerr := c.q.Release(ctx, c.it); rerr != nil {
		return exitWith(sigStatus(sig), fmt.Errorf("queue take %s: %v while delivering the item (the item was not taken: it goes back to the queue as baton exits; giving it back now failed: %v)", name, sig, rerr))
	}
	return exitWith(sigStatus(sig), fmt.Errorf("queue take %s: %v while delivering the item (the item was not taken: it stays in the queue)", name, sig))
}

// writeFlushed writes b to w and flushes it: to the disk for a regular
// file, so that an item removed from the queue is not lost with the page
// cache. It catches SIGPIPE while it writes.
func writeFlushed(w io.Writer, b []byte) error {
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	if _, err := w.Write(b); err != nil {
		return err
	}
	switch f := w.(type) {
	case interface{ Flush() error }:
		if err := f.Flush(); err != nil {
			return fmt.Errorf("flush stdout: %w", err)
		}
	case *os.File:
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if err := f.Sync(); err != nil {
				return fmt.Errorf("sync stdout: %w", err)
			}
		}
	}
	return nil
}
