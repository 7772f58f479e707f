package zk

import (
	"context"

	gozk "github.com/go-zookeeper/zk"
)

// The reads baton makes, each one go-zookeeper request retried across
// connection losses (retry), on an absolute path. On an error they return
// zero values: a request abandoned by ctx may still complete and write
// its results (see call), so those are read only after a success.

// exists is Exists: whether p exists, and its stat.
func (c *conn) exists(ctx context.Context, p string) (bool, *gozk.Stat, error) {
	var ok bool
	var st *gozk.Stat
	if err := c.retry(ctx, func() error {
		var e error
		ok, st, e = c.zc.Exists(p)
		return e
	}); err != nil {
		return false, nil, err
	}
	return ok, st, nil
}

// existsW is exists with a watch, which fires once p is created, changed
// or deleted.
func (c *conn) existsW(ctx context.Context, p string) (bool, *gozk.Stat, <-chan gozk.Event, error) {
	var ok bool
	var st *gozk.Stat
	var ch <-chan gozk.Event
	if err := c.retry(ctx, func() error {
		var e error
		ok, st, ch, e = c.zc.ExistsW(p)
		return e
	}); err != nil {
		return false, nil, nil, err
	}
	return ok, st, ch, nil
}

// get is Get: p's data and stat.
func (c *conn) get(ctx context.Context, p string) ([]byte, *gozk.Stat, error) {
	var data []byte
	var st *gozk.Stat
	if err := c.retry(ctx, func() error {
		var e error
		data, st, e = c.zc.Get(p)
		return e
	}); err != nil {
		return nil, nil, err
	}
	return data, st, nil
}

// children is Children: the names of p's children, unordered.
func (c *conn) children(ctx context.Context, p string) ([]string, error) {
	var names []string
	if err := c.retry(ctx, func() error {
		var e error
		names, _, e = c.zc.Children(p)
		return e
	}); err != nil {
		return nil, err
	}
	return names, nil
}

// childrenW is children with a watch, which fires once p's children
// change or p is deleted.
func (c *conn) childrenW(ctx context.Context, p string) ([]string, <-chan gozk.Event, error) {
	var names []string
	var ch <-chan gozk.Event
	if err := c.retry(ctx, func() error {
		var e error
		names, _, ch, e = c.zc.ChildrenW(p)
		return e
	}); err != nil {
		return nil, nil, err
	}
	return names, ch, nil
}
