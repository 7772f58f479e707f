package zk

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// Children lists dir's children in baton's order (see sortChildren). A
// listing carries names only: Token and Owner are zero.
func (c *conn) Children(ctx context.Context, dir string) ([]backend.Node, error) {
	dir, err := userPath(dir)
	if err != nil {
		return nil, err
	}
	names, err := c.children(ctx, c.abs(dir))
	if errors.Is(err, baton.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return sortChildren(dir, names), nil
}

// Get reads one node.
func (c *conn) Get(ctx context.Context, path string) ([]byte, backend.Node, error) {
	path, err := userPath(path)
	if err != nil {
		return nil, backend.Node{}, err
	}
	data, st, err := c.get(ctx, c.abs(path))
	if err != nil {
		return nil, backend.Node{}, err
	}
	n := c.statNode(c.abs(path), st)
	if backend.IsItemKind(n.Kind) {
		// Curator's queue items carry its ItemSerializer framing.
		if data, err = decodeItem(data); err != nil {
			return nil, n, fmt.Errorf("zk: %s: %w", path, err)
		}
	}
	return data, n, nil
}

// unique reports whether a node's name is never reused: it carries a
// per-create id (ours, Curator's, go-zookeeper's, kazoo's).
func unique(name string) bool {
	p := parseName(name)
	return p.sequential && p.kind != backend.KindQueue && p.kind != "" &&
		(strings.HasPrefix(name, protectedPrefix) || strings.Contains(name, "__"))
}

// Delete removes that incarnation of n: a delete at the version read
// with its czxid (see version), so never a later node of the same name.
func (c *conn) Delete(ctx context.Context, n backend.Node) error {
	n, err := userNode(n)
	if err != nil {
		return err
	}
	if n.Path == "/" {
		return fmt.Errorf("%w: cannot delete /", baton.ErrInvalidName)
	}
	path := c.abs(n.Path)
	for i := 0; i < maxRetries; i++ {
		v, ok, err := c.version(ctx, n)
		if err != nil || !ok {
			return err
		}
		c.w.deleting(path, false)
		err = c.retry(ctx, func() error { return c.zc.Delete(path, v) })
		if errors.Is(err, baton.ErrNotFound) || errors.Is(err, gozk.ErrBadVersion) || errors.Is(err, baton.ErrPermission) {
			c.w.deleting(path, true) // refused: no notification follows
		}
		if err == nil || errors.Is(err, baton.ErrNotFound) {
			return nil
		}
		if !errors.Is(err, gozk.ErrBadVersion) {
			return err
		}
	}
	return fmt.Errorf("zk: delete %s: node keeps changing", n.Path)
}

// version returns the data version of n's incarnation, for a versioned op
// that cannot touch a later node of the same name; ok is false when that
// incarnation is gone. A node without a Token, or whose name is never
// reused (see unique), needs no read: its version is -1 (any).
func (c *conn) version(ctx context.Context, n backend.Node) (int32, bool, error) {
	if n.Token == 0 || unique(n.Name) {
		return -1, true, nil
	}
	ok, st, err := c.exists(ctx, c.abs(n.Path))
	if err != nil || !ok {
		return 0, false, err
	}
	if st.Czxid != n.Token {
		return 0, false, nil
	}
	return st.Version, true, nil
}
