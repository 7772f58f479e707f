package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// Every wait here follows one pattern: open the watch at the current
// revision (no start revision), wait until the server confirms it, and only
// then read the state. A watch with no start revision joins the server's
// synced watcher group and is notified as soon as a change commits, while
// one started at a past revision is caught up by a loop that runs every
// 100 ms (etcd's watchResyncPeriod): that loop is what makes
// concurrency.Mutex hand off at ~10/s. Reading after the watch exists
// leaves no gap: any change the read misses is delivered by the watch, as
// long as the read is at or after the watch's creation revision
// (readAtLeast makes sure of it).

// errWatchBroken marks a watch that ended without ctx or the session
// ending (the server cancelled it, or it could not be created): the wait
// starts over with a new watch and a new read.
type errWatchBroken struct{ err error }

func (e *errWatchBroken) Error() string { return "etcd: watch broken: " + e.err.Error() }
func (e *errWatchBroken) Unwrap() error { return e.err }

// rewatch runs wait until it returns something other than a broken watch.
func (c *conn) rewatch(ctx context.Context, wait func() error) error {
	for {
		err := wait()
		var broken *errWatchBroken
		if !errors.As(err, &broken) {
			return err
		}
		if err := sleepCtx(ctx, c.life, retryDelay); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if serr := c.Err(); serr != nil {
				return serr
			}
			return err
		}
	}
}

// watch is one open watch.
type watch struct {
	rev    int64 // the store's revision when the watch was created
	ch     clientv3.WatchChan
	cancel context.CancelFunc
}

// openWatch starts a watch on key from the current revision and returns
// once the server has created it.
func (c *conn) openWatch(ctx context.Context, key string, opts ...clientv3.OpOption) (*watch, error) {
	wctx, cancel := c.withLife(ctx)
	// A distinct metadata-free ctx keeps all watches of this client on one
	// gRPC stream; WithRequireLeader fails the watch when the member is cut
	// off from its cluster instead of leaving it silent.
	wctx = clientv3.WithRequireLeader(wctx)
	opts = append(opts, clientv3.WithCreatedNotify())
	w := &watch{ch: c.cli.Watch(wctx, key, opts...), cancel: cancel}
	select {
	case wr, ok := <-w.ch:
		if !ok || wr.Err() != nil || !wr.Created {
			cancel()
			return nil, c.broken(ctx, "watch "+key, watchErr(wr, ok))
		}
		w.rev = wr.Header.Revision
		c.saw(w.rev)
		return w, nil
	case <-wctx.Done():
		cancel()
		return nil, c.fail(ctx, "watch "+key, wctx.Err())
	}
}

// next returns the next events of the watch.
func (c *conn) next(ctx context.Context, w *watch, key string) ([]*clientv3.Event, error) {
	for {
		select {
		case wr, ok := <-w.ch:
			if !ok || wr.Err() != nil || wr.Canceled {
				return nil, c.broken(ctx, "watch "+key, watchErr(wr, ok))
			}
			if len(wr.Events) == 0 {
				continue // progress notification
			}
			c.watchEvents.Add(int64(len(wr.Events)))
			c.saw(wr.Header.Revision)
			return wr.Events, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, c.Err()
		}
	}
}

// broken is fail for a watch: an error that is neither ctx's nor the
// session's is a broken watch, to be set up again.
func (c *conn) broken(ctx context.Context, op string, err error) error {
	err = c.fail(ctx, op, err)
	if ctx.Err() != nil || c.Err() != nil {
		return err
	}
	return &errWatchBroken{err}
}

func watchErr(wr clientv3.WatchResponse, ok bool) error {
	if !ok {
		return errors.New("watch closed")
	}
	if err := wr.Err(); err != nil {
		return err
	}
	return fmt.Errorf("watch cancelled: %s", wr.CancelReason)
}

// WaitGone returns once that incarnation of n (its CreateRevision, n.Token)
// is gone. It watches n's key alone, after one listing of n's earlier
// siblings that answers the next WaitGone calls of a waiter walking back
// through its queue (see goneCache). A key of the same name made again
// later (the same lease queuing again) is a different incarnation and does
// not hold the wait.
func (c *conn) WaitGone(ctx context.Context, n backend.Node) error {
	if err := checkDir(n.Path); err != nil {
		return err
	}
	// Our own node, most often a holder's: the session's kept watch of
	// the key tells (see held.go). If that watch breaks, we watch the key
	// alone.
	if c.ownNode(n) {
		ok, err := c.waitHeld(ctx, n)
		var broken *errWatchBroken
		if ok && !errors.As(err, &broken) {
			return err
		}
	}
	return c.rewatch(ctx, func() error { return c.waitGone(ctx, n) })
}

func (c *conn) waitGone(ctx context.Context, n backend.Node) error {
	if err := c.Err(); err != nil {
		return err
	}
	if n.Token != 0 {
		if c.knownGone(n) {
			return nil
		}
		// Walking back through a queue we listed before: the node is
		// most likely gone already, and one read says so.
		if c.listedBefore(n) {
			if gone, _, err := c.checkGone(ctx, n, n.Token); err != nil || gone {
				return err
			}
		}
	}
	w, err := c.armGone(ctx, n)
	if err != nil || w == nil {
		return err
	}
	defer w.cancel()
	for {
		evs, err := c.next(ctx, w, n.Path)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			// The read saw n, so a delete after it is n's own; a put of
			// another incarnation means n went before it.
			if ev.Type == mvccpb.DELETE || !sameIncarnation(ev.Kv, n) {
				return nil
			}
		}
	}
}

// maxRearm bounds how often armGone sets a watch again on an old server.
const maxRearm = 3

// armGone opens a watch on n's key and then checks that n is still there.
// It returns a nil watch when n is gone already.
//
// Servers before 3.6 turn "from now" into "from the revision I just read
// plus one" before registering the watch; a write landing in between
// (a writer holding the watch store's lock delays the registration) puts
// the watch in the unsynced group, served every 100 ms. Their created
// response carries the revision read, so a check made after it that sees
// the same revision proves the watch synced. Otherwise nothing tells a
// synced watch from an unsynced one, so on those servers we open another
// and keep them all, a few at most, taking whichever reports first: each is
// unsynced only if it lost that race, and all of them rarely do.
func (c *conn) armGone(ctx context.Context, n backend.Node) (*watch, error) {
	var ws []*watch
	for attempt := 0; ; attempt++ {
		w, err := c.openWatch(ctx, n.Path)
		if err != nil {
			cancelAll(ws)
			return nil, err
		}
		ws = append(ws, w)
		gone, rev, err := c.goneSince(ctx, n, w.rev)
		if err != nil || gone {
			cancelAll(ws)
			return nil, err
		}
		if !c.oldWatch || rev == w.rev || attempt == maxRearm {
			return merge(ws), nil
		}
	}
}

func cancelAll(ws []*watch) {
	for _, w := range ws {
		w.cancel()
	}
}

// merge returns one watch delivering the responses of all of ws.
func merge(ws []*watch) *watch {
	if len(ws) == 1 {
		return ws[0]
	}
	out := make(chan clientv3.WatchResponse)
	stop := make(chan struct{})
	var once sync.Once
	for _, w := range ws {
		go func() {
			for wr := range w.ch {
				select {
				case out <- wr:
				case <-stop:
					return
				}
			}
			// One of them ended: report the merged watch broken.
			select {
			case out <- clientv3.WatchResponse{Canceled: true, CancelReason: "one of the merged watches closed"}:
			case <-stop:
			}
		}()
	}
	return &watch{rev: ws[0].rev, ch: out, cancel: func() {
		once.Do(func() { close(stop) })
		cancelAll(ws)
	}}
}

// goneSince reports whether n is gone at a revision no earlier than rev,
// and the revision it looked at.
func (c *conn) goneSince(ctx context.Context, n backend.Node, rev int64) (bool, int64, error) {
	if n.Token == 0 {
		resp, err := c.readAtLeast(ctx, n.Path, rev)
		if err != nil {
			return false, 0, err
		}
		return len(resp.Kvs) == 0, resp.Header.Revision, nil
	}
	// On old servers the revision must come from a read made after the
	// watch was created (see armGone): a kept listing, even one at the
	// watch's revision, says nothing about a write that landed between the
	// server reading its revision and registering the watch.
	if !c.oldWatch {
		if gone, at, known := c.goneAt(n, rev); known {
			return gone, at, nil
		}
	}
	return c.checkGone(ctx, n, rev)
}

func sameIncarnation(kv *mvccpb.KeyValue, n backend.Node) bool {
	return n.Token == 0 || kv.CreateRevision == n.Token
}

// WaitChanged returns once that incarnation of n (its CreateRevision,
// n.Token) has been written since n.Version (its ModRevision) or is gone
// (ErrNotFound). It watches n's key alone.
func (c *conn) WaitChanged(ctx context.Context, n backend.Node) error {
	if err := checkDir(n.Path); err != nil {
		return err
	}
	return c.rewatch(ctx, func() error { return c.waitChanged(ctx, n) })
}

func (c *conn) waitChanged(ctx context.Context, n backend.Node) error {
	if err := c.Err(); err != nil {
		return err
	}
	w, err := c.openWatch(ctx, n.Path)
	if err != nil {
		return err
	}
	defer w.cancel()
	resp, err := c.readAtLeast(ctx, n.Path, w.rev)
	if err != nil {
		return err
	}
	changed := func(kv *mvccpb.KeyValue) (bool, error) {
		if kv == nil || !sameIncarnation(kv, n) {
			return true, fmt.Errorf("%w: %s", baton.ErrNotFound, n.Path)
		}
		return kv.ModRevision != n.Version, nil
	}
	var kv *mvccpb.KeyValue
	if len(resp.Kvs) > 0 {
		kv = resp.Kvs[0]
	}
	if done, err := changed(kv); done || err != nil {
		return err
	}
	for {
		evs, err := c.next(ctx, w, n.Path)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			kv := ev.Kv
			if ev.Type == mvccpb.DELETE {
				kv = nil
			}
			if done, err := changed(kv); done || err != nil {
				return err
			}
		}
	}
}

// WaitChildren returns once the direct children of dir differ from since
// (baton.ChildrenDiffer), at once if they already do.
func (c *conn) WaitChildren(ctx context.Context, dir string, since []backend.Node) error {
	if err := checkDir(dir); err != nil {
		return err
	}
	return c.rewatch(ctx, func() error { return c.waitChildren(ctx, dir, since) })
}

func (c *conn) waitChildren(ctx context.Context, dir string, since []backend.Node) error {
	if err := c.Err(); err != nil {
		return err
	}
	pfx := prefix(dir)
	w, err := c.openWatch(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	defer w.cancel()
	resp, err := c.readAtLeast(ctx, pfx, w.rev, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	if backend.ChildrenDiffer(children(pfx, resp.Kvs), since) {
		return nil
	}
	for {
		evs, err := c.next(ctx, w, pfx)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			_, isChild := childName(pfx, string(ev.Kv.Key))
			if _, _, isItem := pqChild(pfx, string(ev.Kv.Key)); !isChild && !isItem {
				continue
			}
			// A new key or a deleted one changes the set; a put on an
			// existing key (its data) does not.
			if ev.Type == mvccpb.DELETE || ev.IsCreate() {
				return nil
			}
		}
	}
}

// WaitExists returns the node at path once it exists, at once if it does.
func (c *conn) WaitExists(ctx context.Context, path string) (backend.Node, error) {
	if err := checkDir(path); err != nil {
		return backend.Node{}, err
	}
	var n backend.Node
	err := c.rewatch(ctx, func() (err error) {
		n, err = c.waitExists(ctx, path)
		return err
	})
	return n, err
}

func (c *conn) waitExists(ctx context.Context, path string) (backend.Node, error) {
	if err := c.Err(); err != nil {
		return backend.Node{}, err
	}
	w, err := c.openWatch(ctx, path)
	if err != nil {
		return backend.Node{}, err
	}
	defer w.cancel()
	resp, err := c.readAtLeast(ctx, path, w.rev)
	if err != nil {
		return backend.Node{}, err
	}
	if len(resp.Kvs) > 0 {
		return nodeOf(resp.Kvs[0]), nil
	}
	for {
		evs, err := c.next(ctx, w, path)
		if err != nil {
			return backend.Node{}, err
		}
		for _, ev := range evs {
			if ev.Type == mvccpb.PUT {
				return nodeOf(ev.Kv), nil
			}
		}
	}
}
