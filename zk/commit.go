package zk

import (
	"context"
	"errors"
	"fmt"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// Commit applies ops in one multi, behind a check of guard when guard is
// set. Like Delete, it is exact about incarnations: the guard and every Set
// or Delete target with a Token whose name may be reused (a "qn-<seq>" item
// comes back when its container is remade) is read first, and the multi
// carries its version, so it never touches a later node of the same name.
// If the connection is lost before the reply, the outcome is unknown and
// Commit says so rather than apply the ops twice.
func (c *conn) Commit(ctx context.Context, guard backend.Node, ops ...backend.Op) error {
	m, err := c.newMulti(guard, ops)
	if err != nil || len(m.reqs) == 0 {
		return err
	}
	if err := c.checkMulti(ctx, m); err != nil {
		return err
	}
	for range maxRetries {
		if err := c.pinVersions(ctx, m); err != nil {
			return err
		}
		var res []gozk.MultiResponse
		err := c.call(ctx, func() error {
			var e error
			res, e = c.zc.Multi(m.reqs...)
			return e
		})
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errConnLoss):
			return c.unknown(ctx, "commit", err)
		case ctx.Err() != nil || baton.IsSessionGone(err) || c.Err() != nil:
			// call gave up on the request: it may still write res.
			return err
		}
		if err := c.refused(ctx, m, res, err); err != nil {
			return err
		}
	}
	return fmt.Errorf("zk: commit: the nodes keep changing")
}

// multi is a Commit's requests, with what each one acts on.
type multi struct {
	reqs    []any
	steps   []multiStep    // one per request
	nodes   []backend.Node // the guard and the targets, once each
	index   map[string]int // path → index in nodes
	guarded bool           // nodes[0] is the guard
}

// multiStep is what one request of a multi acts on.
type multiStep struct {
	dir   string // the parent of a create, else ""
	pin   int    // the index in nodes it acts on, or -1
	fixed bool   // its version is the op's own (IfVersion)
}

func (m *multi) add(req any, s multiStep) {
	m.reqs = append(m.reqs, req)
	m.steps = append(m.steps, s)
}

// pin returns n's index in m.nodes, adding it once.
func (m *multi) pin(n backend.Node) int {
	if i, ok := m.index[n.Path]; ok {
		return i
	}
	m.index[n.Path] = len(m.nodes)
	m.nodes = append(m.nodes, n)
	return len(m.nodes) - 1
}

// gone is the error for nodes[i] found missing.
func (m *multi) gone(i int) error {
	if m.guarded && i == 0 {
		return fmt.Errorf("%w: %s is gone", backend.ErrGuard, m.nodes[0].Path)
	}
	return fmt.Errorf("%w: %s", baton.ErrNotFound, m.nodes[i].Path)
}

// newMulti turns the guard and ops into requests. Versions are set later,
// by pinVersions.
func (c *conn) newMulti(guard backend.Node, ops []backend.Op) (*multi, error) {
	m := &multi{index: map[string]int{}}
	if guard.Path != "" {
		guard, err := userNode(guard)
		if err != nil {
			return nil, err
		}
		m.guarded = true
		m.add(&gozk.CheckVersionRequest{Path: c.abs(guard.Path), Version: -1}, multiStep{pin: m.pin(guard)})
	}
	for _, op := range ops {
		var err error
		switch op.Kind {
		case backend.OpSet, backend.OpDelete:
			err = c.addChange(m, op)
		case backend.OpCreate:
			err = c.addCreate(m, op)
		default:
			err = fmt.Errorf("zk: commit: unknown op kind %d", op.Kind)
		}
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

// addChange adds a Set or a Delete of op.Node.
func (c *conn) addChange(m *multi, op backend.Op) error {
	n, err := userNode(op.Node)
	if err != nil {
		return err
	}
	v := int32(-1)
	if op.IfVersion {
		if n.Version == -1 || n.Version != int64(int32(n.Version)) {
			// -1 is "any version" to the server: never send it as a condition.
			return fmt.Errorf("%w: %s: version %d cannot be checked", baton.ErrConflict, n.Path, n.Version)
		}
		v = int32(n.Version)
	}
	var req any = &gozk.DeleteRequest{Path: c.abs(n.Path), Version: v}
	if op.Kind == backend.OpSet {
		req = &gozk.SetDataRequest{Path: c.abs(n.Path), Data: notNull(op.Data), Version: v}
	}
	m.add(req, multiStep{pin: m.pin(n), fixed: op.IfVersion})
	return nil
}

// addCreate adds the create of op.Name (a kind, when sequential) in op.Dir.
func (c *conn) addCreate(m *multi, op backend.Op) error {
	dir, err := topDir(op.Dir, op.Flags)
	if err != nil {
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
	req := &gozk.CreateRequest{Path: c.abs(backend.Join(dir, name)), Data: notNull(op.Data), Acl: c.acl, Flags: createFlags(op.Flags)}
	m.add(req, multiStep{dir: dir, pin: -1})
	return nil
}

// checkMulti refuses a multi the server would refuse for its size, or
// whose creates' parents we may not use.
func (c *conn) checkMulti(ctx context.Context, m *multi) error {
	size := requestOverhead
	for _, r := range m.reqs {
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
	if err := checkSize(fmt.Sprintf("a transaction of %d operations", len(m.reqs)), size); err != nil {
		return err
	}
	for _, s := range m.steps {
		if s.dir == "" {
			continue
		}
		if err := c.checkDir(ctx, s.dir); err != nil {
			return err
		}
	}
	return nil
}

// pinVersions sets each request without a version of its own to the
// current version of the incarnation it acts on.
func (c *conn) pinVersions(ctx context.Context, m *multi) error {
	for i, n := range m.nodes {
		v, ok, err := c.version(ctx, n)
		if err != nil {
			return err
		}
		if !ok {
			return m.gone(i)
		}
		for j, r := range m.reqs {
			if m.steps[j].pin != i || m.steps[j].fixed {
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
	return nil
}

// refused handles a multi the server refused (err, with res per request):
// nil means try again.
func (c *conn) refused(ctx context.Context, m *multi, res []gozk.MultiResponse, err error) error {
	i := failed(res)
	if i < 0 {
		return err
	}
	s, why := m.steps[i], res[i].Error
	switch {
	case s.pin >= 0 && errors.Is(why, gozk.ErrNoNode):
		return m.gone(s.pin)
	case s.fixed && errors.Is(why, gozk.ErrBadVersion):
		n := m.nodes[s.pin]
		return fmt.Errorf("%w: %s changed since version %d", baton.ErrConflict, n.Path, n.Version)
	case s.pin >= 0 && errors.Is(why, gozk.ErrBadVersion):
		return nil // changed since it was read (data or incarnation): read it again
	case s.dir != "" && errors.Is(why, gozk.ErrNoNode):
		return c.makeParents(ctx, c.abs(s.dir))
	default:
		return c.mapErr(why)
	}
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
