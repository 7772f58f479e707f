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

// Commit applies ops in one multi, behind a check of guard when guard is
// set. Like Delete, it is exact about incarnations: the guard and every Set
// or Delete target with a Token whose name may be reused (a "qn-<seq>" item
// comes back when its container is removed and remade) is read first, and
// the multi carries its version, so it applies to the node whose czxid is
// the Token and to no later node of the same name. If the connection is
// lost before the reply, the outcome is unknown and Commit says so rather
// than apply the ops twice.
func (c *conn) Commit(ctx context.Context, guard backend.Node, ops ...backend.Op) error {
	var reqs []any
	var dirs []string         // per request: the parent of a create, else ""
	var pins []int            // per request: the index in nodes it acts on, or -1
	var fixed []bool          // per request: its version is the op's own (IfVersion)
	var nodes []backend.Node  // the guard and the targets, once each
	index := map[string]int{} // path → index in nodes
	pin := func(n backend.Node) int {
		if i, ok := index[n.Path]; ok {
			return i
		}
		index[n.Path] = len(nodes)
		nodes = append(nodes, n)
		return len(nodes) - 1
	}
	if guard.Path != "" {
		var err error
		if guard, err = userNode(guard); err != nil {
			return err
		}
		reqs = append(reqs, &gozk.CheckVersionRequest{Path: c.abs(guard.Path), Version: -1})
		dirs = append(dirs, "")
		pins = append(pins, pin(guard))
		fixed = append(fixed, false)
	}
	for _, op := range ops {
		switch op.Kind {
		case backend.OpSet, backend.OpDelete:
			var err error
			if op.Node, err = userNode(op.Node); err != nil {
				return err
			}
			v := int32(-1)
			if op.IfVersion {
				if op.Node.Version == -1 || op.Node.Version != int64(int32(op.Node.Version)) {
					// -1 is "any version" to the server: never send it as a condition.
					return fmt.Errorf("%w: %s: version %d cannot be checked", baton.ErrConflict, op.Node.Path, op.Node.Version)
				}
				v = int32(op.Node.Version)
			}
			if op.Kind == backend.OpSet {
				reqs = append(reqs, &gozk.SetDataRequest{Path: c.abs(op.Node.Path), Data: notNull(op.Data), Version: v})
			} else {
				reqs = append(reqs, &gozk.DeleteRequest{Path: c.abs(op.Node.Path), Version: v})
			}
			dirs = append(dirs, "")
			pins = append(pins, pin(op.Node))
			fixed = append(fixed, op.IfVersion)
		case backend.OpCreate:
			var err error
			if op.Dir, err = topDir(op.Dir, op.Flags); err != nil {
				return err
			}
			name := op.Name
			if op.Flags&backend.Sequential != 0 {
				prefix, _, ok := sequentialName(op.Name, newID())
				if !ok {
					return fmt.Errorf("%w: no sequential node kind %q", baton.ErrInvalidName, op.Name)
				}
				name = prefix
			} else if err := checkElem(name); err != nil {
				return err
			}
			reqs = append(reqs, &gozk.CreateRequest{Path: c.abs(backend.Join(op.Dir, name)), Data: notNull(op.Data), Acl: c.acl, Flags: createFlags(op.Flags)})
			dirs = append(dirs, op.Dir)
			pins = append(pins, -1)
			fixed = append(fixed, false)
		default:
			return fmt.Errorf("zk: commit: unknown op kind %d", op.Kind)
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	size := requestOverhead
	for _, r := range reqs {
		switch r := r.(type) {
		case *gozk.CreateRequest:
			if err := c.checkCreate(r.Path, r.Data, backend.Sequential); err != nil {
				return err
			}
			size += len(r.Path) + len(r.Data) + aclLen(r.Acl) + requestOverhead
		case *gozk.SetDataRequest:
			size += len(r.Path) + len(r.Data) + requestOverhead
		case *gozk.DeleteRequest:
			size += len(r.Path) + requestOverhead
		case *gozk.CheckVersionRequest:
			size += len(r.Path) + requestOverhead
		}
	}
	if err := checkSize(fmt.Sprintf("a transaction of %d operations", len(reqs)), size); err != nil {
		return err
	}
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		if err := c.checkDir(ctx, dir); err != nil {
			return err
		}
	}
	gone := func(i int) error {
		if guard.Path != "" && i == 0 {
			return fmt.Errorf("%w: %s is gone", backend.ErrGuard, guard.Path)
		}
		return fmt.Errorf("%w: %s", baton.ErrNotFound, nodes[i].Path)
	}
	for attempt := 0; attempt < maxRetries; attempt++ {
		// Pin each incarnation to its current version.
		for i, n := range nodes {
			v, ok, err := c.version(ctx, n)
			if err != nil {
				return err
			}
			if !ok {
				return gone(i)
			}
			for j, r := range reqs {
				if pins[j] != i || fixed[j] {
					continue
				}
				switch r := r.(type) {
				case *gozk.CheckVersionRequest:
					r.Version = v
				case *gozk.SetDataRequest:
					r.Version = v
				case *gozk.DeleteRequest:
					r.Version = v
				}
			}
		}
		var res []gozk.MultiResponse
		err := c.call(ctx, func() error {
			var e error
			res, e = c.zc.Multi(reqs...)
			return e
		})
		if err == nil {
			return nil
		}
		if errors.Is(err, errConnLoss) {
			return c.unknown(ctx, "commit", err)
		}
		if ctx.Err() != nil || baton.IsSessionGone(err) || c.Err() != nil {
			// call gave up on the request: res may still be written
			// by it, so it must not be read.
			return err
		}
		i := failed(res)
		if i < 0 {
			return err
		}
		switch {
		case pins[i] >= 0 && errors.Is(res[i].Error, gozk.ErrNoNode):
			return gone(pins[i])
		case fixed[i] && errors.Is(res[i].Error, gozk.ErrBadVersion):
			return fmt.Errorf("%w: %s changed since version %d", baton.ErrConflict, nodes[pins[i]].Path, nodes[pins[i]].Version)
		case pins[i] >= 0 && errors.Is(res[i].Error, gozk.ErrBadVersion):
			// Changed since it was read (its data, or another
			// incarnation): read it again.
		case dirs[i] != "" && errors.Is(res[i].Error, gozk.ErrNoNode):
			if err := c.makeParents(ctx, c.abs(dirs[i])); err != nil {
				return err
			}
		default:
			return c.mapErr(res[i].Error)
		}
	}
	return fmt.Errorf("zk: commit: the nodes keep changing")
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

// failed returns the index of the op that failed a multi, or -1: ops
// before it report success, ops after it a runtime inconsistency.
func failed(res []gozk.MultiResponse) int {
	for i, r := range res {
		if r.Error != nil {
			return i
		}
	}
	return -1
}
