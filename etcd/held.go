package etcd

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/batonhq/baton/backend"
)

// A holder watches its own node for its whole hold, so that its lease ends
// when anyone deletes the node. A watch per hold would cost three requests
// per acquisition (a watch, a read, a cancel). Instead the session keeps
// one watch per key of its own, open across holds: a session names its
// node on a lock after its lease (reserve), so taking the same lock again
// reuses the key, and its watch, and costs no request for the watch.
//
// A node's Token is its CreateRevision, so the node was there at that
// revision and any delete of it comes later. A key watch started at or
// before Token+1 and still running misses none: it remembers the last
// delete it saw, which the holder checks first, then it tells the holder
// of the next. The watch filters out puts (our own creates), so it hears
// only deletes of our own key: it adds no notification to anyone else's
// wait.

// maxHoldKeys bounds the key watches of a session; past it an idle one is
// closed, or, when none is idle, the holder watches its key alone.
const maxHoldKeys = 64

// keyWatch is one kept watch on a key of ours. Its fields are guarded by
// conn.holdMu.
type keyWatch struct {
	from       int64              // it reports the deletes after from
	lastDelete int64              // the revision of the last delete it saw
	holders    map[*holder]bool   // who waits on it
	cancel     context.CancelFunc // stops the watch
	broken     chan struct{}      // closed once the watch has ended
}

var errHoldWatchEnded = errors.New("watch of our own key ended")

// holder is one wait for a node to go.
type holder struct {
	after int64         // the node's CreateRevision
	gone  chan struct{} // closed once a delete after after is seen
}

// waitHeld waits on the key watch of our own node n for n to go. It
// returns ok false when it cannot (no key watch covers n and no new one
// may be opened), and a broken-watch error when the key watch ended.
func (c *conn) waitHeld(ctx context.Context, n backend.Node) (ok bool, err error) {
	h := &holder{after: n.Token, gone: make(chan struct{})}
	kw := c.holdOn(n.Path, h)
	if kw == nil {
		return false, nil
	}
	defer c.unhold(kw, h)
	select {
	case <-h.gone:
		return true, nil
	case <-kw.broken:
		return true, c.broken(ctx, "watch "+n.Path, errHoldWatchEnded)
	case <-ctx.Done():
		return true, ctx.Err()
	case <-c.done:
		return true, c.Err()
	}
}

// holdOn registers h with a key watch of key that covers it, opening one
// if needed, and returns that watch; nil if there is none.
func (c *conn) holdOn(key string, h *holder) *keyWatch {
	c.holdMu.Lock()
	defer c.holdMu.Unlock()
	if c.Err() != nil {
		return nil
	}
	kw := c.holds[key]
	if kw != nil && kw.from > h.after {
		// It started after our node was made: it may have missed its
		// delete.
		if len(kw.holders) > 0 {
			return nil
		}
		kw.cancel()
		delete(c.holds, key)
		kw = nil
	}
	if kw == nil {
		if len(c.holds) >= maxHoldKeys && !c.closeIdleHold() {
			return nil
		}
		if kw = c.openHold(key, h.after); kw == nil {
			return nil // closed
		}
		c.holds[key] = kw
	}
	if kw.lastDelete > h.after {
		close(h.gone)
		return kw
	}
	kw.holders[h] = true
	return kw
}

// closeIdleHold closes one key watch nobody waits on, if any.
func (c *conn) closeIdleHold() bool {
	for key, kw := range c.holds {
		if len(kw.holders) == 0 {
			kw.cancel()
			delete(c.holds, key)
			return true
		}
	}
	return false
}

func (c *conn) unhold(kw *keyWatch, h *holder) {
	c.holdMu.Lock()
	delete(kw.holders, h)
	c.holdMu.Unlock()
}

// openHold starts a watch of key's deletes from revision after+1, or
// returns nil once Close has stopped c.bg. Called with holdMu held.
func (c *conn) openHold(key string, after int64) *keyWatch {
	wctx, cancel := c.withLife(context.Background())
	// The client runs one watch stream per distinct ctx metadata. Our key
	// watches get a stream of their own: the waits' stream then empties
	// and closes after each wait, which ends its watch with the stream,
	// instead of a cancel request per wait. WithRequireLeader ends the
	// watch when the member is cut off from its cluster.
	wctx = metadata.AppendToOutgoingContext(wctx, "baton-watch", "held")
	ch := c.cli.Watch(clientv3.WithRequireLeader(wctx), key, clientv3.WithRev(after+1), clientv3.WithFilterPut())
	kw := &keyWatch{from: after, holders: map[*holder]bool{}, cancel: cancel, broken: make(chan struct{})}
	if !c.bg.start(func() { c.readHold(key, kw, ch) }) {
		cancel()
		return nil
	}
	return kw
}

// readHold tells the holders of kw of the deletes of ch until the watch
// ends. Only a delete that ends a hold counts as a watch event (a wake-up):
// the others are our own releases.
func (c *conn) readHold(key string, kw *keyWatch, ch clientv3.WatchChan) {
	defer kw.cancel()
	for wr := range ch {
		if wr.Err() != nil || wr.Canceled {
			break
		}
		c.saw(wr.Header.Revision)
		c.holdMu.Lock()
		for _, ev := range wr.Events {
			if ev.Type != mvccpb.DELETE {
				continue
			}
			rev := ev.Kv.ModRevision
			kw.lastDelete = max(kw.lastDelete, rev)
			for h := range kw.holders {
				if rev > h.after {
					delete(kw.holders, h)
					close(h.gone)
					c.watchEvents.Add(1)
				}
			}
		}
		c.holdMu.Unlock()
	}
	c.holdMu.Lock()
	if c.holds[key] == kw {
		delete(c.holds, key)
	}
	close(kw.broken)
	c.holdMu.Unlock()
}

// ownNode reports whether n is a node this session made and may still
// have.
func (c *conn) ownNode(n backend.Node) bool {
	if n.Token == 0 {
		return false
	}
	return c.reserved.has(n.Path)
}
