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
	t, err := c.commitTxn(guard, ops)
	if err != nil {
		return err
	}
	rctx, cancel := c.withLife(ctx)
	defer cancel()
	resp, err := c.cli.Txn(rctx).If(t.cmps...).Then(t.then...).Else(t.els...).Commit()
	if err != nil {
		for _, k := range t.reserved {
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
	for _, k := range t.reserved {
		c.unreserve(k)
	}
	return t.why(resp)
}

// txn is a Commit's Txn: its conditions and writes, and for each
// condition a Get in els whose check says, should the Txn fail, why.
type txn struct {
	cmps      []clientv3.Cmp
	then, els []clientv3.Op
	checks    []func(*mvccpb.KeyValue) error // one per Get in els
	reserved  []string                       // the keys reserved for sequential creates
}

// commitTxn builds Commit's Txn of guard and ops.
func (c *conn) commitTxn(guard backend.Node, ops []backend.Op) (*txn, error) {
	t := &txn{}
	if guard.Path != "" {
		if err := t.guard(guard); err != nil {
			return nil, err
		}
	}
	for _, op := range ops {
		var err error
		switch op.Kind {
		case backend.OpSet, backend.OpDelete:
			err = t.change(op)
		case backend.OpCreate:
			err = c.txnCreate(t, op)
		default:
			err = fmt.Errorf("etcd: commit: unknown op kind %d", op.Kind)
		}
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// require adds cmp to the conditions, and a read of key that check
// explains with should the Txn fail.
func (t *txn) require(cmp clientv3.Cmp, key string, check func(*mvccpb.KeyValue) error) {
	t.cmps = append(t.cmps, cmp)
	t.els = append(t.els, clientv3.OpGet(key))
	t.checks = append(t.checks, check)
}

// guard makes the Txn require that incarnation of g.
func (t *txn) guard(g backend.Node) error {
	if err := checkDir(g.Path); err != nil {
		return err
	}
	t.require(incarnation(g), g.Path, func(kv *mvccpb.KeyValue) error {
		if !isIncarnation(kv, g) {
			return fmt.Errorf("%w: %s", backend.ErrGuard, g.Path)
		}
		return nil
	})
	return nil
}

// change adds a Set or a Delete of op.Node, which requires its
// incarnation (and, with IfVersion, its revision).
func (t *txn) change(op backend.Op) error {
	n := op.Node
	if err := checkDir(n.Path); err != nil {
		return err
	}
	t.require(incarnation(n), n.Path, func(kv *mvccpb.KeyValue) error {
		if !isIncarnation(kv, n) {
			return fmt.Errorf("%w: %s", baton.ErrNotFound, n.Path)
		}
		if op.IfVersion && kv.ModRevision != n.Version {
			return fmt.Errorf("%w: %s is at revision %d, not %d", baton.ErrConflict, n.Path, kv.ModRevision, n.Version)
		}
		return nil
	})
	if op.IfVersion {
		// No read of its own: the incarnation's read explains it.
		t.cmps = append(t.cmps, clientv3.Compare(clientv3.ModRevision(n.Path), "=", n.Version))
	}
	if op.Kind == backend.OpSet {
		t.then = append(t.then, clientv3.OpPut(n.Path, string(op.Data), clientv3.WithIgnoreLease()))
	} else {
		t.then = append(t.then, clientv3.OpDelete(n.Path))
	}
	return nil
}

// txnCreate adds a create of op, which requires its key to be absent. A
// sequential create's key is reserved for it.
func (c *conn) txnCreate(t *txn, op backend.Op) error {
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
		t.reserved = append(t.reserved, key)
	}
	var putOpts []clientv3.OpOption
	if op.Flags&backend.Ephemeral != 0 {
		putOpts = append(putOpts, clientv3.WithLease(c.lease))
	}
	t.require(clientv3.Compare(clientv3.CreateRevision(key), "=", 0), key, func(kv *mvccpb.KeyValue) error {
		if kv != nil {
			return fmt.Errorf("%w: %s", baton.ErrExists, key)
		}
		return nil
	})
	t.then = append(t.then, clientv3.OpPut(key, string(op.Data), putOpts...))
	return nil
}

// why explains a Txn that failed by the first of its reads to fail its
// check.
func (t *txn) why(resp *clientv3.TxnResponse) error {
	for i, f := range t.checks {
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
