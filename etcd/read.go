package etcd

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton"
)

// Children lists the direct children of dir: sequential nodes by
// CreateRevision, then the others by name.
func (c *conn) Children(ctx context.Context, dir string) ([]baton.Node, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	pfx := prefix(dir)
	rctx, cancel := c.withLife(ctx)
	defer cancel()
	resp, err := c.cli.Get(rctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return nil, c.fail(ctx, "list "+pfx, err)
	}
	return children(pfx, resp.Kvs), nil
}

// Get reads one key.
func (c *conn) Get(ctx context.Context, path string) ([]byte, baton.Node, error) {
	if err := checkDir(path); err != nil {
		return nil, baton.Node{}, err
	}
	if err := c.Err(); err != nil {
		return nil, baton.Node{}, err
	}
	rctx, cancel := c.withLife(ctx)
	defer cancel()
	resp, err := c.cli.Get(rctx, path)
	if err != nil {
		return nil, baton.Node{}, c.fail(ctx, "get "+path, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, baton.Node{}, fmt.Errorf("%w: %s", baton.ErrNotFound, path)
	}
	kv := resp.Kvs[0]
	return kv.Value, nodeOf(kv), nil
}

// Delete removes n if its key still holds that incarnation (its
// CreateRevision is n.Token): a newer key of the same name, even one on
// the same lease, is never touched. With no Token it deletes the key.
func (c *conn) Delete(ctx context.Context, n baton.Node) error {
	if err := checkDir(n.Path); err != nil {
		return err
	}
	if err := c.Err(); err != nil {
		return err
	}
	for {
		rctx, cancel := c.withLife(ctx)
		var err error
		if n.Token != 0 {
			_, err = c.cli.Txn(rctx).
				If(clientv3.Compare(clientv3.CreateRevision(n.Path), "=", n.Token)).
				Then(clientv3.OpDelete(n.Path)).
				Commit()
		} else {
			_, err = c.cli.Delete(rctx, n.Path)
		}
		cancel()
		if err == nil {
			// Whichever branch ran, that incarnation is gone now.
			if n.Owner == c.id {
				c.unreserve(n.Path)
			}
			return nil
		}
		if ctx.Err() == nil && c.Err() == nil && retryable(err) {
			if sleepCtx(ctx, c.life, retryDelay) == nil {
				continue
			}
		}
		return c.fail(ctx, "delete "+n.Path, err)
	}
}

// Commit applies ops in one Txn, only while guard (that incarnation)
// exists. Each Set and Delete also requires its target's incarnation
// (when its Token is known), and each Create requires its key to be
// absent. If the guard is gone the result is ErrGuard; if only a target
// failed, ErrNotFound (Set, Delete) or ErrExists (Create).
func (c *conn) Commit(ctx context.Context, guard baton.Node, ops ...baton.Op) error {
	if err := c.Err(); err != nil {
		return err
	}
	var cmps []clientv3.Cmp
	if guard.Path != "" {
		if err := checkDir(guard.Path); err != nil {
			return err
		}
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(guard.Path), "=", guard.Token))
	}
	var then []clientv3.Op
	var reserved []string
	for _, op := range ops {
		switch op.Kind {
		case baton.OpSet, baton.OpDelete:
			if err := checkDir(op.Node.Path); err != nil {
				return err
			}
			if op.Node.Token != 0 {
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(op.Node.Path), "=", op.Node.Token))
			} else {
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(op.Node.Path), ">", 0))
			}
			if op.Kind == baton.OpSet {
				then = append(then, clientv3.OpPut(op.Node.Path, string(op.Data), clientv3.WithIgnoreLease()))
			} else {
				then = append(then, clientv3.OpDelete(op.Node.Path))
			}
		case baton.OpCreate:
			if err := checkDir(op.Dir); err != nil {
				return err
			}
			if err := checkElem(op.Name); err != nil {
				return err
			}
			key := baton.Join(op.Dir, op.Name)
			if op.Flags&baton.Sequential != 0 {
				var err error
				if key, err = c.reserve(op.Dir, op.Name, op.Flags); err != nil {
					return err
				}
				reserved = append(reserved, key)
			}
			var putOpts []clientv3.OpOption
			if op.Flags&baton.Ephemeral != 0 {
				putOpts = append(putOpts, clientv3.WithLease(c.lease))
			}
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
			then = append(then, clientv3.OpPut(key, string(op.Data), putOpts...))
		default:
			return fmt.Errorf("etcd: commit: unknown op kind %d", op.Kind)
		}
	}
	rctx, cancel := c.withLife(ctx)
	defer cancel()
	var els []clientv3.Op
	if guard.Path != "" {
		els = append(els, clientv3.OpGet(guard.Path))
	}
	resp, err := c.cli.Txn(rctx).If(cmps...).Then(then...).Else(els...).Commit()
	if err != nil {
		for _, k := range reserved {
			c.forget(ctx, k)
		}
		return c.fail(ctx, "commit", err)
	}
	if resp.Succeeded {
		return nil
	}
	for _, k := range reserved {
		c.unreserve(k)
	}
	if guard.Path != "" {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 || kvs[0].CreateRevision != guard.Token {
			return fmt.Errorf("%w: %s", baton.ErrGuard, guard.Path)
		}
	}
	for _, op := range ops {
		if op.Kind == baton.OpCreate {
			return fmt.Errorf("%w: commit: a target changed or a created key exists", baton.ErrNotFound)
		}
	}
	return fmt.Errorf("%w: commit: a target node is gone", baton.ErrNotFound)
}
