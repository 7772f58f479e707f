package bench

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdLayoutFloor is the contended floor of a lock in etcd's concurrency
// layout, which baton keeps for etcdctl to interoperate: each acquisition
// writes the contender's key (its place in line) and each release deletes
// it, so a cycle is two raft writes. A waiter watches the key before its
// own from the current revision, checks once that it is still there, and
// takes the lock at its deletion. Who is before whom is decided in this
// process, so unlike a real lock it never lists the line or re-checks it
// after waking: baton on the same server can approach it but not pass it.
// Its lockers must all live in one process.
type EtcdLayoutFloor struct {
	Endpoints []string

	lines lines[layoutLine]
}

// layoutLine is the in-process order of one lock name.
type layoutLine struct {
	mu   sync.Mutex
	tail *layoutLocker // the last to queue, while it holds or waits
}

// Open connects one client.
func (f *EtcdLayoutFloor) Open(ctx context.Context) (Client, error) {
	return openLineClient(f.Endpoints, func(c *lineClient, name, key string) Locker {
		return &layoutLocker{cli: c.cli, line: f.lines.get(name), key: key}
	})
}

type layoutLocker struct {
	cli  *clientv3.Client
	line *layoutLine
	key  string
	rev  int64 // CreateRevision of our key while we hold or wait
	in   bool  // holding or waiting (guarded by line.mu)
}

// Lock writes our key, then waits for the key queued before ours to go.
func (l *layoutLocker) Lock(ctx context.Context) error {
	resp, err := l.cli.Put(ctx, l.key, "")
	if err != nil {
		return err
	}
	l.line.mu.Lock()
	l.rev = resp.Header.Revision
	pred := l.line.tail
	var predKey string
	var predRev int64
	if pred != nil && pred.in {
		predKey, predRev = pred.key, pred.rev
	}
	l.line.tail, l.in = l, true
	l.line.mu.Unlock()
	if predKey == "" {
		return nil
	}
	if err := l.waitGone(ctx, predKey, predRev); err != nil {
		l.leave()
		return err
	}
	return nil
}

// waitGone watches key from now, checks it still holds that incarnation,
// and waits for it to go.
func (l *layoutLocker) waitGone(ctx context.Context, key string, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := l.cli.Watch(clientv3.WithRequireLeader(wctx), key, clientv3.WithCreatedNotify())
	select {
	case wr, ok := <-w:
		if !ok || !wr.Created {
			return errors.New("layout floor: watch not created")
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	g, err := l.cli.Get(ctx, key, clientv3.WithSerializable())
	if err != nil {
		return err
	}
	if len(g.Kvs) == 0 || g.Kvs[0].CreateRevision != rev {
		return nil
	}
	for {
		select {
		case wr, ok := <-w:
			if !ok || wr.Err() != nil {
				return errors.New("layout floor: watch ended")
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE || ev.Kv.CreateRevision != rev {
					return nil
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Unlock deletes our key.
func (l *layoutLocker) Unlock(ctx context.Context) error {
	_, err := l.cli.Delete(ctx, l.key)
	l.line.mu.Lock()
	l.in = false
	l.line.mu.Unlock()
	return err
}

// leave deletes our key after a cancelled wait.
func (l *layoutLocker) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.Unlock(ctx)
}
