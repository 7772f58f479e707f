package etcd

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// Children lists the direct children of dir: sequential nodes by
// CreateRevision, then the others by name. The listing is linearizable: it
// holds every write that completed before the call, whichever member took
// it, as the recipes' answers need (TryLock's ErrLocked, a permit that
// another session's Release has just freed, a leader just resigned). A
// read from the member we talk to alone may answer from before a write
// the others have applied. The waits read that way (readAtLeast): their
// watch delivers whatever such a read missed.
func (c *conn) Children(ctx context.Context, dir string) ([]backend.Node, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	pfx := prefix(dir)
	resp, err := c.readLatest(ctx, pfx, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	return children(pfx, resp.Kvs), nil
}

// Get reads one key, with Children's consistency.
func (c *conn) Get(ctx context.Context, path string) ([]byte, backend.Node, error) {
	if err := checkDir(path); err != nil {
		return nil, backend.Node{}, err
	}
	if err := c.Err(); err != nil {
		return nil, backend.Node{}, err
	}
	resp, err := c.readLatest(ctx, path)
	if err != nil {
		return nil, backend.Node{}, err
	}
	if len(resp.Kvs) == 0 {
		return nil, backend.Node{}, fmt.Errorf("%w: %s", baton.ErrNotFound, path)
	}
	kv := resp.Kvs[0]
	return kv.Value, nodeOf(kv), nil
}

// readAtLeast reads key from the member we talk to without a raft round
// trip (a serializable read), and again linearizably if that member had not
// yet applied revision rev. Once a key created by rev is absent at a later
// revision it is gone for good, so a serializable answer at or after rev is
// as good as a linearizable one here.
func (c *conn) readAtLeast(ctx context.Context, key string, rev int64, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	rctx, cancel := c.attempt(ctx, 0)
	resp, err := c.cli.Get(rctx, key, append(opts, clientv3.WithSerializable())...)
	cancel()
	if err == nil && resp.Header.Revision >= rev {
		c.saw(resp.Header.Revision)
		return resp, nil
	}
	return c.readLatest(ctx, key, opts...)
}

// readLatest reads key linearizably (a raft round trip), one try at a
// time (attempt.go).
func (c *conn) readLatest(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	for attempt := 0; ; attempt++ {
		actx, acancel := c.attempt(ctx, attempt)
		resp, err := c.cli.Get(actx, key, opts...)
		again := err != nil && c.again(ctx, actx, err)
		acancel()
		if err == nil {
			c.saw(resp.Header.Revision)
			return resp, nil
		}
		if !again || sleepCtx(ctx, c.life, retryDelay) != nil {
			return nil, c.fail(ctx, "get "+key, err)
		}
	}
}

// saw records that the store had reached revision rev.
func (c *conn) saw(rev int64) { c.seen.raise(rev) }
