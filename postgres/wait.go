package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// Watch kinds (the watches table's kind).
const (
	watchGone   = "gone"
	watchData   = "data"
	watchExists = "exists"
	watchKids   = "kids"
)

// minTimer keeps a waiter whose timer fired early (its clock runs fast
// against the server's) from asking in a tight loop.
const minTimer = 5 * time.Millisecond

// wait is one wait: it checks its condition on the server and, unless
// met, registers a one-shot watch there and sleeps until the watch fires,
// the session of a node it waits on reaches its expiry on the server's
// clock (then it sweeps expired sessions and looks again), or the
// listening connection broke. kids is checked against since for a kids
// wait. It reports whether the node was gone (a data wait).
func (c *conn) wait(ctx context.Context, path, kind string, token, version int64, since []backend.Node) (gone bool, err error) {
	var old int64 // the previous round's watch, if it did not fire
	defer func() {
		if old != 0 {
			c.dropWatch(ctx, old)
		}
	}()
	for {
		wid := c.wids.Add(1)
		ch := make(chan struct{})
		c.waitMu.Lock()
		c.waits[wid] = ch
		c.waitMu.Unlock()
		wake := c.wakeChan()
		var (
			state     string
			left      *int64
			kidPaths  []string
			kidTokens []int64
		)
		err := c.do(ctx, true, func(ctx context.Context) error {
			return c.pool.QueryRow(ctx, c.q.watch, c.id, wid, old, path, kind, token, version).
				Scan(&state, &left, &kidPaths, &kidTokens)
		})
		old = 0
		if err == nil && state == "wait" {
			old = wid
			if kind == watchKids {
				kids := make([]backend.Node, len(kidPaths))
				for i := range kidPaths {
					kids[i] = backend.Node{Path: kidPaths[i], Token: kidTokens[i]}
				}
				if backend.ChildrenDiffer(kids, since) {
					state = "met"
				}
			}
		}
		if err != nil || state != "wait" {
			c.waitMu.Lock()
			delete(c.waits, wid)
			c.waitMu.Unlock()
			return state == "gone", err
		}
		var timer <-chan time.Time
		if left != nil {
			t := time.NewTimer(max(ms(*left)+minTimer, minTimer))
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-ch:
			old = 0 // fired: the server deleted it
			if kind == watchGone {
				// Only the deletion of that incarnation fires a gone watch,
				// in its transaction, and the notification comes after the
				// commit: the node is gone, no need to ask again. This is
				// a hand-off's critical path: one round trip less.
				return false, nil
			}
		case <-timer:
			// The session of a node we wait on may have expired without
			// anybody noticing: delete it (and whatever else expired).
			if err := c.do(ctx, true, func(ctx context.Context) error {
				_, err := c.pool.Exec(ctx, c.q.sweep)
				return err
			}); err != nil {
				return false, err
			}
		case <-wake:
		case <-c.done:
			return false, c.Err()
		case <-ctx.Done():
			return false, ctx.Err()
		}
		c.waitMu.Lock()
		delete(c.waits, wid)
		c.waitMu.Unlock()
	}
}

// dropWatch deletes a watch that did not fire, so that none is left
// behind a wait that returned. After the session ends its watches go with
// it.
func (c *conn) dropWatch(ctx context.Context, wid int64) {
	c.waitMu.Lock()
	delete(c.waits, wid)
	c.waitMu.Unlock()
	if c.Err() != nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(c.ttl/3, maxRenewInterval))
	defer cancel()
	_, _ = c.pool.Exec(dctx, c.q.unwatch, c.id, wid)
}

func (c *conn) WaitGone(ctx context.Context, n backend.Node) error {
	_, err := c.wait(ctx, n.Path, watchGone, n.Token, 0, nil)
	return err
}

func (c *conn) WaitChildren(ctx context.Context, dir string, since []backend.Node) error {
	if err := validPath(dir); err != nil {
		return err
	}
	_, err := c.wait(ctx, dir, watchKids, 0, 0, since)
	return err
}

func (c *conn) WaitExists(ctx context.Context, path string) (backend.Node, error) {
	if err := validPath(path); err != nil {
		return backend.Node{}, err
	}
	for {
		if _, err := c.wait(ctx, path, watchExists, 0, 0, nil); err != nil {
			return backend.Node{}, err
		}
		_, n, err := c.Get(ctx, path)
		if err == nil || !isNotFound(err) {
			return n, err
		}
		// Deleted again before we read it: wait again.
	}
}

func (c *conn) WaitChanged(ctx context.Context, n backend.Node) error {
	if err := validPath(n.Path); err != nil {
		return err
	}
	gone, err := c.wait(ctx, n.Path, watchData, n.Token, n.Version, nil)
	if err == nil && gone {
		return fmt.Errorf("%w: %s", baton.ErrNotFound, n.Path)
	}
	return err
}
