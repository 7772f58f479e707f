package etcd

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// maxSeq bounds an item's seq to its sixteen digits.
const maxSeq = 1e16 - 1

// createItem makes a PriorityQueue item of priority p under dir in etcd's
// layout (pqkeys.go); with list it then lists dir's children (a second
// request: the seq is only known once the put has been allocated).
func (c *conn) createItem(ctx context.Context, dir string, p int32, data []byte, f backend.Flags, list bool) (backend.Node, []backend.Node, error) {
	if err := checkPriority(p); err != nil {
		return backend.Node{}, nil, err
	}
	if f&backend.Ephemeral != 0 {
		return backend.Node{}, nil, fmt.Errorf("%w: a queue item is persistent", baton.ErrInvalidName)
	}
	n, err := c.enqueue(ctx, dir, p, data)
	if err != nil || !list {
		return n, nil, err
	}
	kids, err := c.Children(ctx, dir)
	return n, kids, err
}

// pqTry is one try of enqueue's Txn: it writes id into the base key and
// the item into key, if the base key has not been written since after.
type pqTry struct {
	base, key, id string
	after         int64
}

// enqueue puts an item as etcd's Enqueue does (newSequentialKV): the seq
// after the last key of the priority, in a Txn guarded by the base key's
// ModRevision, so that a seq is never handed out twice, nor one below a
// key deleted meanwhile. etcd's Enqueue writes "" into the base key; we
// write an id of the try, which its guard ignores, so that a try whose
// reply was lost can be told applied or not (settle): Create is
// exactly-once.
func (c *conn) enqueue(ctx context.Context, dir string, p int32, data []byte) (backend.Node, error) {
	pfx := pqPrefix(dir, p)
	lost := 0 // tries whose outcome was unknown
	for {
		if err := ctx.Err(); err != nil {
			return backend.Node{}, err
		}
		if err := c.Err(); err != nil {
			return backend.Node{}, err
		}
		resp, err := c.readLatest(ctx, pfx+"/", clientv3.WithLastKey()...)
		if err != nil {
			return backend.Node{}, err
		}
		seq := int64(0)
		if len(resp.Kvs) > 0 {
			last, ok := parseSeq(string(resp.Kvs[0].Key))
			if !ok || last >= maxSeq {
				return backend.Node{}, fmt.Errorf("%w: %s is not an item of etcd's priority queue layout (%s/<16 digits>)",
					baton.ErrIncompatible, resp.Kvs[0].Key, pfx)
			}
			seq = last + 1
		}
		id := uuid.New()
		t := pqTry{base: "__" + pfx, key: pqKey(dir, p, seq), id: hex.EncodeToString(id[:]), after: resp.Header.Revision}
		// Sent, a try runs to its own deadline whatever ctx does (as in
		// create), and one whose reply is lost is settled before the next.
		rctx, cancel := c.attempt(context.WithoutCancel(ctx), lost)
		tresp, err := c.cli.Txn(rctx).If(
			clientv3.Compare(clientv3.ModRevision(t.base), "<", t.after+1),
			clientv3.Compare(clientv3.CreateRevision(t.key), "=", 0),
		).Then(clientv3.OpPut(t.base, t.id), clientv3.OpPut(t.key, string(data))).Commit()
		unknown := err != nil && (rctx.Err() != nil || retryable(err))
		cancel()
		if err == nil {
			c.saw(tresp.Header.Revision)
			if tresp.Succeeded {
				return itemNode(t.key, p, seq, tresp.Header.Revision), nil
			}
			continue // another put took the seq: allocate again
		}
		if !unknown {
			return backend.Node{}, c.fail(ctx, "put "+t.key, err)
		}
		lost++
		rev, landed, serr := c.settle(ctx, t)
		if serr != nil {
			return backend.Node{}, c.fail(ctx, "put "+t.key+": its outcome is unknown", serr)
		}
		if landed {
			return itemNode(t.key, p, seq, rev), nil
		}
		if err := sleepCtx(ctx, c.life, retryDelay); err != nil {
			return backend.Node{}, c.fail(ctx, "put "+t.key, err)
		}
	}
}

// itemNode is the node of item seq of priority p made at revision rev.
func itemNode(key string, p int32, seq, rev int64) backend.Node {
	return backend.Node{Path: key, Name: pqName(p, seq), Kind: backend.PriorityKind(p), Seq: rev, Token: rev, Version: rev}
}

// settle decides whether try t, whose reply was lost, was applied, and at
// which revision. If the base key has not been written since t.after, t
// may still be on its way: settle writes the base key itself ("", as
// etcd's Enqueue does), guarded as t is, which makes t's guard fail for
// good, and looks again. It runs to its own deadline whatever ctx does, so
// that a cancelled Put never leaves an item behind that it reported not
// made.
func (c *conn) settle(ctx context.Context, t pqTry) (int64, bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		rev, landed, decided, err := c.lookBack(ctx, t)
		if err != nil {
			return 0, false, err
		}
		if decided {
			return rev, landed, nil
		}
		actx, acancel := c.attempt(ctx, attempt)
		_, err = c.cli.Txn(actx).If(clientv3.Compare(clientv3.ModRevision(t.base), "<", t.after+1)).
			Then(clientv3.OpPut(t.base, "")).Commit()
		again := err != nil && c.again(ctx, actx, err)
		acancel()
		if err != nil && !again {
			return 0, false, err
		}
		if err != nil {
			if serr := sleepCtx(ctx, c.life, retryDelay); serr != nil {
				return 0, false, serr
			}
		}
	}
}

// lookBack reads the base key's writes since t.after, newest first: one
// with t's id is t's (applied at that revision); any other makes t's guard
// fail for good (decided, not applied); none leaves t undecided.
func (c *conn) lookBack(ctx context.Context, t pqTry) (rev int64, landed, decided bool, err error) {
	resp, err := c.readLatest(ctx, t.base)
	if err != nil {
		return 0, false, false, err
	}
	for len(resp.Kvs) > 0 && resp.Kvs[0].ModRevision > t.after {
		kv := resp.Kvs[0]
		if string(kv.Value) == t.id {
			return kv.ModRevision, true, true, nil
		}
		decided = true
		// The value before this write (an error once compacted).
		if resp, err = c.readLatest(ctx, t.base, clientv3.WithRev(kv.ModRevision-1)); err != nil {
			return 0, false, false, err
		}
	}
	return 0, false, decided, nil
}
