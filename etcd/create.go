package etcd

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// retryDelay spaces the retries of a request whose outcome is unknown.
const retryDelay = 50 * time.Millisecond

// Create makes a child of dir. A sequential node is named from kind and
// the session's lease id (see the package doc); a non-sequential node is
// named kind and fails with ErrExists if the key is there. The create is
// a create-if-absent Txn on a key reserved for this call, so a retry after
// a lost reply finds the key it made instead of making a second one.
func (c *conn) Create(ctx context.Context, dir, kind string, data []byte, f backend.Flags) (backend.Node, error) {
	n, _, err := c.create(ctx, dir, kind, data, f, false)
	return n, err
}

// CreateAndList creates a sequential node and lists the direct children of
// dir (including it) in one Txn.
func (c *conn) CreateAndList(ctx context.Context, dir, kind string, data []byte, f backend.Flags) (backend.Node, []backend.Node, error) {
	return c.create(ctx, dir, kind, data, f, true)
}

// creation is one create: the key it makes under dir and how.
type creation struct {
	dir, key string
	data     []byte
	f        backend.Flags
	seq      bool // a sequential node, on a key reserved for this call
	list     bool // also list dir
}

func (c *conn) create(ctx context.Context, dir, kind string, data []byte, f backend.Flags, list bool) (backend.Node, []backend.Node, error) {
	cr := creation{dir: dir, key: backend.Join(dir, kind), data: data, f: f, seq: f&backend.Sequential != 0, list: list}
	// A plain node may sit at the top of the keyspace (a Barrier named
	// "deploy"): its key is just its name. Sequential nodes and listings
	// need a real parent.
	topLevel := !cr.seq && !list && (dir == "" || dir == "/")
	if err := checkDir(dir); err != nil && !topLevel {
		return backend.Node{}, nil, err
	}
	if err := checkElem(kind); err != nil {
		return backend.Node{}, nil, err
	}
	if err := c.Err(); err != nil {
		return backend.Node{}, nil, err
	}
	if p, ok := backend.ParsePriorityKind(kind); ok && cr.seq {
		return c.createItem(ctx, dir, p, data, f, list)
	}
	if cr.seq {
		var err error
		if cr.key, err = c.reserve(dir, kind, f); err != nil {
			return backend.Node{}, nil, err
		}
	}
	return c.createTxn(ctx, cr)
}

// createTxn makes cr.key with a create-if-absent Txn, retried while its
// outcome is unknown.
func (c *conn) createTxn(ctx context.Context, cr creation) (backend.Node, []backend.Node, error) {
	cond, then, els := c.createOps(cr)
	for attempt := 0; ; attempt++ {
		// A try, once sent, is not abandoned when ctx ends: etcd applies
		// concurrent requests in no set order, so forget's delete, sent
		// while a cancelled create was on its way, could be applied first
		// and leave the key on a lease that lives on. So ctx is checked
		// before each try, a try runs to its own deadline, and a node made
		// meanwhile is returned for the caller's clean-up to delete.
		if err := ctx.Err(); err != nil {
			if cr.seq {
				c.dropReserved(ctx, cr.key, attempt > 0)
			}
			return backend.Node{}, nil, err
		}
		rctx, cancel := c.attempt(context.WithoutCancel(ctx), attempt)
		resp, err := c.cli.Txn(rctx).If(cond).Then(then...).Else(els...).Commit()
		again := err != nil && c.again(ctx, rctx, err)
		cancel()
		if err != nil {
			if again && sleepCtx(ctx, c.life, retryDelay) == nil {
				continue
			}
			if cr.seq {
				c.forget(ctx, cr.key)
			}
			return backend.Node{}, nil, c.fail(ctx, "create "+cr.key, err)
		}
		c.saw(resp.Header.Revision)
		n, ok, err := c.createdNode(cr, resp, attempt)
		if err != nil {
			return backend.Node{}, nil, err
		}
		if !ok {
			continue // deleted between compare and get: cannot happen in one Txn
		}
		if !cr.list {
			return n, nil, nil
		}
		kvs := resp.Responses[1].GetResponseRange().Kvs
		c.remember(prefix(cr.dir), resp.Header.Revision, resp.Header.Revision, kvs)
		return n, children(prefix(cr.dir), kvs), nil
	}
}

// createOps is cr's create-if-absent Txn: put the key if absent, else
// read it; with cr.list, list the directory either way.
func (c *conn) createOps(cr creation) (cond clientv3.Cmp, then, els []clientv3.Op) {
	var putOpts []clientv3.OpOption
	if cr.f&backend.Ephemeral != 0 {
		putOpts = append(putOpts, clientv3.WithLease(c.lease))
	}
	cond = clientv3.Compare(clientv3.CreateRevision(cr.key), "=", 0)
	then = []clientv3.Op{clientv3.OpPut(cr.key, string(cr.data), putOpts...)}
	els = []clientv3.Op{clientv3.OpGet(cr.key)}
	if cr.list {
		pfx := prefix(cr.dir)
		then = append(then, clientv3.OpGet(pfx, clientv3.WithPrefix(), clientv3.WithKeysOnly()))
		els = append(els, clientv3.OpGet(pfx, clientv3.WithPrefix(), clientv3.WithKeysOnly()))
	}
	return cond, then, els
}

// dropReserved gives up a reserved key: deleted (forget) if a try that
// may have made it was sent, else only freed.
func (c *conn) dropReserved(ctx context.Context, key string, sent bool) {
	if sent {
		c.forget(ctx, key)
	} else {
		c.unreserve(key)
	}
}

// createdNode is the node a create Txn made, or found made by an earlier
// try of this call; ok is false when the Txn found the key but read none.
func (c *conn) createdNode(cr creation, resp *clientv3.TxnResponse, attempt int) (n backend.Node, ok bool, err error) {
	rev := resp.Header.Revision
	if resp.Succeeded {
		n = backend.Node{Path: cr.key, Seq: rev, Token: rev, Version: rev}
		n.Name = cr.key[len(prefix(cr.dir)):]
		n.Kind, _ = parseName(n.Name)
		n.Created = createdOf(n.Name)
		if cr.f&backend.Ephemeral != 0 {
			n.Owner = c.id
		}
		return n, true, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return backend.Node{}, false, nil
	}
	kv := kvs[0]
	// An existing key is ours only if an earlier try of this call made
	// it: a reserved sequential key, or (after a lost reply) a literal key
	// with our lease and data.
	ephemeral := cr.f&backend.Ephemeral != 0
	ours := cr.seq || (attempt > 0 && string(kv.Value) == string(cr.data) &&
		(!ephemeral || kv.Lease == int64(c.lease)))
	if !ours {
		return backend.Node{}, false, fmt.Errorf("%w: %s", baton.ErrExists, cr.key)
	}
	if ephemeral && kv.Lease != int64(c.lease) {
		return backend.Node{}, false, fmt.Errorf("%w: %s belongs to lease %x", baton.ErrExists, cr.key, kv.Lease)
	}
	return nodeOf(kv), true, nil
}

// forget deletes a reserved key whose create failed (it may or may not
// have been applied) and frees the name. Only this session makes it, so
// an unconditional delete removes nothing of anyone else. If the delete
// fails too, it goes on in the background until it succeeds or the
// session ends: a key made by a create whose reply was lost, left on a
// lease that lives on, would stall every waiter queued after it.
func (c *conn) forget(ctx context.Context, key string) {
	if c.forgetOnce(ctx, key) {
		return
	}
	// Once closed, no goroutine starts: the session's keys went with its
	// lease.
	c.bg.start(func() {
		delay := retryDelay
		for {
			if sleepCtx(c.life, c.life, delay) != nil || c.forgetOnce(c.life, key) {
				return
			}
			delay = min(2*delay, closeTimeout)
		}
	})
}

// forgetOnce tries forget's delete for up to closeTimeout, and reports
// whether that settled it: the key is gone, or the session is over.
func (c *conn) forgetOnce(ctx context.Context, key string) bool {
	if c.Err() != nil {
		return true
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		rctx, rcancel := c.attempt(ctx, attempt)
		_, err := c.cli.Delete(rctx, key)
		again := err != nil && c.again(ctx, rctx, err)
		rcancel()
		if err == nil {
			c.unreserve(key)
			return true
		}
		if !again || sleepCtx(ctx, c.life, retryDelay) != nil {
			return c.Err() != nil
		}
	}
}

// children returns the direct children of pfx among kvs, and the items of
// etcd's priority queue layout under it (pqkeys.go): sequential nodes by
// CreateRevision, then the others by name.
func children(pfx string, kvs []*mvccpb.KeyValue) []backend.Node {
	type ranked struct {
		n   backend.Node
		seq bool
	}
	var rs []ranked
	for _, kv := range kvs {
		if name, kind, ok := pqItem(pfx, kv); ok {
			n := nodeOf(kv)
			n.Name, n.Kind = name, kind
			rs = append(rs, ranked{n, true})
			continue
		}
		if _, ok := childName(pfx, string(kv.Key)); !ok {
			continue
		}
		n := nodeOf(kv)
		_, seq := parseName(n.Name)
		rs = append(rs, ranked{n, seq})
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.seq != b.seq {
			return a.seq
		}
		if a.seq {
			return a.n.Seq < b.n.Seq
		}
		return a.n.Name < b.n.Name
	})
	out := make([]backend.Node, len(rs))
	for i, r := range rs {
		out[i] = r.n
	}
	return out
}

// retryable says whether a failed request may be retried: the outcome is
// unknown because the connection failed, not because the server refused.
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	// Refused credentials or permissions stay refused.
	if IsAuthError(err) {
		return false
	}
	// The client translates the server's errors into EtcdErrors, which
	// carry their gRPC code apart (status.Code would say Unknown): a
	// request too large, say, is InvalidArgument and never retried.
	code := status.Code(err)
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	}
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Unknown:
		return true
	}
	return false
}

// sleepCtx waits d, or returns early with an error when ctx or the session
// ends.
func sleepCtx(ctx, life context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-life.Done():
		return context.Canceled
	}
}
