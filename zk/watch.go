package zk

import (
	"context"
	"errors"
	"fmt"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// wait waits for one watch event. go-zookeeper delivers exactly one event
// on each watch channel (buffered, then closed), so an abandoned watch never
// blocks it. A watch cut by the session's end reports the session's error.
func (c *conn) wait(ctx context.Context, ch <-chan gozk.Event) (gozk.Event, error) {
	select {
	case ev := <-ch:
		if ev.Type == gozk.EventNotWatching {
			if err := c.mapErr(ev.Err); err != nil && c.Err() != nil {
				return ev, c.Err()
			}
			return ev, fmt.Errorf("%w: watch on %s dropped: %v", errConnLoss, ev.Path, ev.Err)
		}
		return ev, nil
	case <-ctx.Done():
		return gozk.Event{}, ctx.Err()
	case <-c.done:
		return gozk.Event{}, c.Err()
	}
}

// WaitGone watches n alone (an exists watch), so a release wakes only the
// waiter behind it.
func (c *conn) WaitGone(ctx context.Context, n backend.Node) error {
	return c.watchNode(ctx, n, func(st *gozk.Stat) (bool, error) { return st == nil, nil })
}

// WaitChanged returns once that incarnation of n has another data
// version than n.Version (nil) or is gone (ErrNotFound). It sets an exists
// watch, which ZooKeeper fires on a write of the data as on a delete.
func (c *conn) WaitChanged(ctx context.Context, n backend.Node) error {
	return c.watchNode(ctx, n, func(st *gozk.Stat) (bool, error) {
		if st == nil {
			return true, fmt.Errorf("%w: %s", baton.ErrNotFound, n.Path)
		}
		return int64(st.Version) != n.Version, nil
	})
}

// watchNode sets an exists watch on n, again after each event, until
// over, given n's stat (nil when that incarnation is gone), says the wait
// is over, with its result.
func (c *conn) watchNode(ctx context.Context, n backend.Node, over func(st *gozk.Stat) (bool, error)) error {
	n, err := userNode(n)
	if err != nil {
		return err
	}
	path := c.abs(n.Path)
	for i := 0; ; i++ {
		ok, st, ch, err := c.existsW(ctx, path)
		if err != nil {
			return err
		}
		if !ok || (n.Token != 0 && st.Czxid != n.Token) {
			st = nil
		}
		if done, err := over(st); done {
			return err
		}
		ev, err := c.wait(ctx, ch)
		if err != nil {
			if errors.Is(err, errConnLoss) && i < maxRetries {
				continue
			}
			return err
		}
		if ev.Type == gozk.EventNodeDeleted {
			if done, err := over(nil); done {
				return err
			}
		}
	}
}

// WaitChildren returns once dir's children differ from since. It sets a
// child watch, or an exists watch while dir is missing.
func (c *conn) WaitChildren(ctx context.Context, dir string, since []backend.Node) error {
	dir, err := userPath(dir)
	if err != nil {
		return err
	}
	// A listing taken with dir spelled without its "/" is the same.
	abs := make([]backend.Node, len(since))
	for i, n := range since {
		abs[i] = n
		abs[i].Path = backend.AbsolutePath(n.Path)
	}
	since = abs
	path := c.abs(dir)
	for i := 0; ; i++ {
		names, ch, err := c.childrenW(ctx, path)
		if errors.Is(err, baton.ErrNotFound) {
			var ok bool
			ok, _, ch, err = c.existsW(ctx, path)
			if err == nil && ok {
				continue // created meanwhile: list it
			}
			names = nil
		}
		if err != nil {
			return err
		}
		if backend.ChildrenDiffer(sortChildren(dir, names), since) {
			return nil
		}
		if _, err := c.wait(ctx, ch); err != nil {
			if errors.Is(err, errConnLoss) && i < maxRetries {
				continue
			}
			return err
		}
	}
}

// WaitExists returns the node at path once it exists.
func (c *conn) WaitExists(ctx context.Context, path string) (backend.Node, error) {
	path, err := userPath(path)
	if err != nil {
		return backend.Node{}, err
	}
	p := c.abs(path)
	for i := 0; ; i++ {
		ok, st, ch, err := c.existsW(ctx, p)
		if err != nil {
			return backend.Node{}, err
		}
		if ok {
			return c.statNode(p, st), nil
		}
		if _, err := c.wait(ctx, ch); err != nil {
			if errors.Is(err, errConnLoss) && i < maxRetries {
				continue
			}
			return backend.Node{}, err
		}
	}
}
