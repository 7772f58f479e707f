package etcd

import (
	"context"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// Delete removes n if its key still holds that incarnation (its
// CreateRevision is n.Token): a newer key of the same name, even one on
// the same lease, is never touched. With no Token but an Owner it deletes
// the key only if that lease owns it; with neither, whatever is there.
func (c *conn) Delete(ctx context.Context, n backend.Node) error {
	if err := checkDir(n.Path); err != nil {
		return err
	}
	if err := c.Err(); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		rctx, cancel := c.attempt(ctx, attempt)
		var err error
		var rev int64
		if n.Token != 0 || n.Owner != "" {
			var resp *clientv3.TxnResponse
			if resp, err = c.cli.Txn(rctx).If(incarnation(n)).Then(clientv3.OpDelete(n.Path)).Commit(); err == nil {
				rev = resp.Header.Revision
			}
		} else {
			var resp *clientv3.DeleteResponse
			if resp, err = c.cli.Delete(rctx, n.Path); err == nil {
				rev = resp.Header.Revision
			}
		}
		again := err != nil && c.again(ctx, rctx, err)
		cancel()
		if err == nil {
			c.saw(rev)
			// Whichever branch ran, that incarnation is gone now.
			if n.Owner == c.id {
				c.unreserve(n.Path)
			}
			return nil
		}
		if again && sleepCtx(ctx, c.life, retryDelay) == nil {
			continue
		}
		return c.fail(ctx, "delete "+n.Path, err)
	}
}

// incarnation compares n's key with n: the same CreateRevision where n's
// Token is known, else the same owning lease where n's Owner is known, else
// mere existence.
func incarnation(n backend.Node) clientv3.Cmp {
	if n.Token != 0 {
		return clientv3.Compare(clientv3.CreateRevision(n.Path), "=", n.Token)
	}
	if id, err := strconv.ParseInt(n.Owner, 16, 64); err == nil && id != 0 {
		return clientv3.Compare(clientv3.LeaseValue(n.Path), "=", clientv3.LeaseID(id))
	}
	return clientv3.Compare(clientv3.CreateRevision(n.Path), ">", 0)
}

// isIncarnation is incarnation's test on a key read back (nil: absent).
func isIncarnation(kv *mvccpb.KeyValue, n backend.Node) bool {
	if kv == nil {
		return false
	}
	if n.Token != 0 {
		return kv.CreateRevision == n.Token
	}
	if id, err := strconv.ParseInt(n.Owner, 16, 64); err == nil && id != 0 {
		return kv.Lease == id
	}
	return true
}

// Commit applies ops in one Txn, only while guard (that incarnation)
// exists. Each Set and Delete also requires its target's incarnation, and
// each Create of a literal name requires its key to be absent. If the
// guard is gone the result is ErrGuard; if only a target failed, ErrNotFound
// (Set, Delete) or ErrExists (Create).
func (c *conn) Commit(ctx context.Context, guard backend.Node, ops ...backend.Op) error {
	if err := c.Err(); err != nil {
		return err
	}
	var cmps []clientv3.Cmp
	var then, els []clientv3.Op
	var checks []func(*mvccpb.KeyValue) error // one per Get in els
	check := func(key string, f func(*mvccpb.KeyValue) error) {
		els = append(els, clientv3.OpGet(key))
		checks = append(checks, f)
	}
	if guard.Path != "" {
		if err := checkDir(guard.Path); err != nil {
			return err
		}
		cmps = append(cmps, incarnation(guard))
		check(guard.Path, func(kv *mvccpb.KeyValue) error {
			if !isIncarnation(kv, guard) {
				return fmt.Errorf("%w: %s", backend.ErrGuard, guard.Path)
			}
			return nil
		})
	}
	var reserved []string
	for _, op := range ops {
		switch op.Kind {
		case backend.OpSet, backend.OpDelete:
			n := op.Node
			if err := checkDir(n.Path); err != nil {
				return err
			}
			cmps = append(cmps, incarnation(n))
			if op.IfVersion {
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(n.Path), "=", n.Version))
			}
			ifVersion := op.IfVersion
			check(n.Path, func(kv *mvccpb.KeyValue) error {
				if !isIncarnation(kv, n) {
					return fmt.Errorf("%w: %s", baton.ErrNotFound, n.Path)
				}
				if ifVersion && kv.ModRevision != n.Version {
					return fmt.Errorf("%w: %s is at revision %d, not %d", baton.ErrConflict, n.Path, kv.ModRevision, n.Version)
				}
				return nil
			})
			if op.Kind == backend.OpSet {
				then = append(then, clientv3.OpPut(n.Path, string(op.Data), clientv3.WithIgnoreLease()))
			} else {
				then = append(then, clientv3.OpDelete(n.Path))
			}
		case backend.OpCreate:
			if err := checkDir(op.Dir); err != nil {
				return err
			}
			if err := checkElem(op.Name); err != nil {
				return err
			}
			key := backend.Join(op.Dir, op.Name)
			if op.Flags&backend.Sequential != 0 {
				var err error
				if key, err = c.reserve(op.Dir, op.Name, op.Flags); err != nil {
					return err
				}
				reserved = append(reserved, key)
			}
			var putOpts []clientv3.OpOption
			if op.Flags&backend.Ephemeral != 0 {
				putOpts = append(putOpts, clientv3.WithLease(c.lease))
			}
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
			check(key, func(kv *mvccpb.KeyValue) error {
				if kv != nil {
					return fmt.Errorf("%w: %s", baton.ErrExists, key)
				}
				return nil
			})
			then = append(then, clientv3.OpPut(key, string(op.Data), putOpts...))
		default:
			return fmt.Errorf("etcd: commit: unknown op kind %d", op.Kind)
		}
	}
	rctx, cancel := c.withLife(ctx)
	defer cancel()
	resp, err := c.cli.Txn(rctx).If(cmps...).Then(then...).Else(els...).Commit()
	if err != nil {
		for _, k := range reserved {
			c.forget(ctx, k)
		}
		return c.fail(ctx, "commit", err)
	}
	if resp.Succeeded {
		for _, op := range ops {
			if op.Kind == backend.OpDelete && op.Node.Owner == c.id {
				c.unreserve(op.Node.Path)
			}
		}
		return nil
	}
	for _, k := range reserved {
		c.unreserve(k)
	}
	for i, f := range checks {
		var kv *mvccpb.KeyValue
		if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
			kv = kvs[0]
		}
		if err := f(kv); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: commit: a target changed meanwhile", baton.ErrNotFound)
}
