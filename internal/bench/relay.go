package bench

import (
	"context"
	"errors"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdRelay is the contended floor on etcd: what one hand-off costs the
// store at the least, one write by the releaser and one watch event to
// the next holder. The line of waiters is kept in this process, so the
// relay does no listing, no re-check and no queuing write of its own; a
// real lock (baton's or etcd's) on the same server cannot hand off faster.
// It is a measuring stick for the contended workload, not a lock: its
// lockers must all live in one process.
type EtcdRelay struct {
	Endpoints []string

	relays lines[relayLine[*relayLocker]]
}

// Open connects one client.
func (f *EtcdRelay) Open(ctx context.Context) (Client, error) {
	return openLineClient(f.Endpoints, func(c *lineClient, name, key string) Locker {
		return &relayLocker{cli: c.cli, r: f.relays.get(name), key: key}
	})
}

// relayLocker watches its own key; a releaser hands the lock over by
// writing the next locker's key.
type relayLocker struct {
	cli *clientv3.Client
	r   *relayLine[*relayLocker]
	key string

	watch clientv3.WatchChan // ends with the client
}

// arm opens this locker's watch once, from now, and waits until the server
// has created it.
func (l *relayLocker) arm(ctx context.Context) error {
	if l.watch != nil {
		return nil
	}
	w := l.cli.Watch(clientv3.WithRequireLeader(context.Background()), l.key, clientv3.WithCreatedNotify())
	select {
	case wr, ok := <-w:
		if !ok || !wr.Created {
			return errors.New("relay: watch not created")
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	l.watch = w
	return nil
}

// Lock takes the lock at once if nobody holds it (one write, as an
// uncontended lock must make), else joins the line and waits for its key
// to be written.
func (l *relayLocker) Lock(ctx context.Context) error {
	if err := l.arm(ctx); err != nil {
		return err
	}
	want, free := l.r.join(l)
	if free {
		_, err := l.cli.Put(ctx, l.key, "self")
		return err
	}
	for {
		select {
		case wr, ok := <-l.watch:
			if !ok || wr.Err() != nil {
				return errors.New("relay: watch ended")
			}
			for _, ev := range wr.Events {
				if string(ev.Kv.Value) == want {
					return nil
				}
			}
		case <-ctx.Done():
			// Leave the line; if we were handed the lock already, pass it on.
			if l.r.leave(l) {
				return ctx.Err()
			}
			uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = l.Unlock(uctx)
			return ctx.Err()
		}
	}
}

// Unlock hands the lock to the first in line with one write to its key,
// or frees it.
func (l *relayLocker) Unlock(ctx context.Context) error {
	next, ok := l.r.next()
	if !ok {
		return nil
	}
	_, err := l.cli.Put(ctx, next.w.key, next.turn)
	return err
}
