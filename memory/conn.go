package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// errConnLoss is what a client sees when a reply is lost.
var errConnLoss = errors.New("memory: connection loss")

type conn struct {
	st  *Store
	id  string
	ttl time.Duration

	// guarded by st.mu
	partitioned bool
	cutAt       time.Time     // when the partition began
	heal        chan struct{} // closed while not partitioned
	dropCreates int

	once   sync.Once
	done   chan struct{}
	err    error
	events atomic.Int64
}

var (
	_ backend.Conn         = (*conn)(nil)
	_ backend.WatchCounter = (*conn)(nil)
	_ backend.Expirer      = (*conn)(nil)
)

// Expiry is when the session will be given up as lost (baton.Expirer):
// the TTL minus the margin after Partition cut it off. Until then every
// call reaches the store at once, so contact counts as confirmed now. It
// is the zero Time once the session has ended.
func (c *conn) Expiry() time.Time {
	if c.Err() != nil {
		return time.Time{}
	}
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if c.partitioned {
		return c.cutAt.Add(c.ttl - margin(c.ttl))
	}
	return time.Now().Add(c.ttl - margin(c.ttl))
}

func (c *conn) ID() string            { return c.id }
func (c *conn) TTL() time.Duration    { return c.ttl }
func (c *conn) Done() <-chan struct{} { return c.done }
func (c *conn) WatchEvents() int64    { return c.events.Load() }
func (c *conn) Close(context.Context) error {
	c.end(baton.ErrClosed, true)
	return nil
}

func (c *conn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// end closes the session with err; serverSide also removes its ephemeral
// nodes (an expiry or a close the server saw). A session lost only locally
// keeps its nodes until the store's own expiry.
func (c *conn) end(err error, serverSide bool) {
	c.once.Do(func() {
		c.err = err
		close(c.done)
	})
	if serverSide {
		c.st.expireServerSide(c)
	}
}

// begin waits out a partition and fails once the session is over. On
// success the store is locked; the caller must unlock it.
func (c *conn) begin(ctx context.Context) error {
	for {
		if err := c.Err(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		c.st.mu.Lock()
		if !c.partitioned {
			return nil
		}
		heal := c.heal
		c.st.mu.Unlock()
		select {
		case <-heal:
		case <-c.done:
		case <-ctx.Done():
		}
	}
}

func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (c *conn) Create(ctx context.Context, dir, kind string, data []byte, f backend.Flags) (backend.Node, error) {
	if err := validDir(dir, f); err != nil {
		return backend.Node{}, err
	}
	if kind == "" || strings.Contains(kind, "/") {
		return backend.Node{}, fmt.Errorf("%w: node name %q", baton.ErrInvalidName, kind)
	}
	uid := newUID()
	if err := c.begin(ctx); err != nil {
		return backend.Node{}, err
	}
	n, err := c.st.put(dir, kind, data, f, c.id, uid)
	var me backend.Node // read under the lock: a Commit may write n after it
	if err == nil {
		me = n.public()
	}
	dropped := false
	if err == nil && c.dropCreates > 0 {
		c.dropCreates--
		dropped = true
	}
	c.st.mu.Unlock()
	if err != nil {
		return backend.Node{}, err
	}
	if !dropped {
		return me, nil
	}
	// The reply was lost. Find the node again by the attempt's unique id
	// (ZooKeeper's protected mode) and make sure it is ours.
	return c.recover(ctx, dir, kind, uid, f)
}

func (c *conn) recover(ctx context.Context, dir, kind, uid string, f backend.Flags) (backend.Node, error) {
	if err := c.begin(ctx); err != nil {
		return backend.Node{}, fmt.Errorf("%w: %w", errConnLoss, err)
	}
	defer c.st.mu.Unlock()
	for _, n := range c.st.kids[dir] {
		if f&backend.Sequential != 0 && kind != backend.KindQueue && strings.Contains(n.name, uid) {
			if n.owner != c.id && f&backend.Ephemeral != 0 {
				c.st.remove(n, c)
				return backend.Node{}, fmt.Errorf("%w: create landed in another session", baton.ErrSessionExpired)
			}
			return n.public(), nil
		}
		if f&backend.Sequential == 0 && n.name == kind && n.owner == c.id {
			return n.public(), nil
		}
	}
	// Not applied after all: create it now.
	n, err := c.st.put(dir, kind, nil, f, c.id, uid)
	if err != nil {
		return backend.Node{}, err
	}
	return n.public(), nil
}

func (c *conn) Children(ctx context.Context, dir string) ([]backend.Node, error) {
	if err := validPath(dir); err != nil {
		return nil, err
	}
	if err := c.begin(ctx); err != nil {
		return nil, err
	}
	defer c.st.mu.Unlock()
	return c.st.children(dir), nil
}

func (c *conn) Get(ctx context.Context, path string) ([]byte, backend.Node, error) {
	if err := validPath(path); err != nil {
		return nil, backend.Node{}, err
	}
	if err := c.begin(ctx); err != nil {
		return nil, backend.Node{}, err
	}
	defer c.st.mu.Unlock()
	n := c.st.nodes[path]
	if n == nil {
		return nil, backend.Node{}, fmt.Errorf("%w: %s", baton.ErrNotFound, path)
	}
	return append([]byte(nil), n.data...), n.public(), nil
}

func (c *conn) Delete(ctx context.Context, want backend.Node) error {
	if err := c.begin(ctx); err != nil {
		return err
	}
	defer c.st.mu.Unlock()
	if n := c.st.lookup(want); n != nil {
		c.st.remove(n, c)
	}
	return nil
}

// wait registers a one-shot watch under key if pending (evaluated under
// the lock) says the condition is not met yet, and waits for it.
func (c *conn) wait(ctx context.Context, key, kind string, met func() bool) error {
	for {
		if err := c.begin(ctx); err != nil {
			return err
		}
		if met() {
			c.st.mu.Unlock()
			return nil
		}
		w := &watch{kind: kind, ch: make(chan struct{}), c: c}
		c.st.watches[key] = append(c.st.watches[key], w)
		c.st.mu.Unlock()
		select {
		case <-w.ch:
			c.st.mu.Lock()
			d := c.st.delay
			c.st.mu.Unlock()
			if d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
			}
		case <-c.done:
			c.unwatch(key, w)
			return c.err
		case <-ctx.Done():
			c.unwatch(key, w)
			return ctx.Err()
		}
	}
}

func (c *conn) unwatch(key string, w *watch) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	ws := c.st.watches[key]
	for i, x := range ws {
		if x == w {
			c.st.watches[key] = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(c.st.watches[key]) == 0 {
		delete(c.st.watches, key)
	}
}

func (c *conn) WaitGone(ctx context.Context, n backend.Node) error {
	return c.wait(ctx, n.Path, "gone", func() bool { return c.st.lookup(n) == nil })
}

func (c *conn) WaitChildren(ctx context.Context, dir string, since []backend.Node) error {
	if err := validPath(dir); err != nil {
		return err
	}
	return c.wait(ctx, dir, "kids", func() bool { return backend.ChildrenDiffer(c.st.children(dir), since) })
}

func (c *conn) WaitExists(ctx context.Context, path string) (backend.Node, error) {
	if err := validPath(path); err != nil {
		return backend.Node{}, err
	}
	var found backend.Node
	err := c.wait(ctx, path, "exists", func() bool {
		n := c.st.nodes[path]
		if n != nil {
			found = n.public()
		}
		return n != nil
	})
	return found, err
}

// WaitChanged returns once that incarnation of n has data of another
// version than n.Version, or is gone (ErrNotFound).
func (c *conn) WaitChanged(ctx context.Context, n backend.Node) error {
	if err := validPath(n.Path); err != nil {
		return err
	}
	gone := false
	err := c.wait(ctx, n.Path, "data", func() bool {
		cur := c.st.lookup(n)
		gone = cur == nil
		return gone || cur.version != n.Version
	})
	if err == nil && gone {
		return fmt.Errorf("%w: %s", baton.ErrNotFound, n.Path)
	}
	return err
}

func (c *conn) Commit(ctx context.Context, guard backend.Node, ops ...backend.Op) error {
	if err := c.begin(ctx); err != nil {
		return err
	}
	defer c.st.mu.Unlock()
	if guard.Path != "" && c.st.lookup(guard) == nil {
		return fmt.Errorf("%w: %s", backend.ErrGuard, guard.Path)
	}
	// Check every op first so that nothing applies unless all can.
	for _, op := range ops {
		switch op.Kind {
		case backend.OpSet, backend.OpDelete:
			n := c.st.lookup(op.Node)
			if n == nil {
				return fmt.Errorf("%w: %s", baton.ErrNotFound, op.Node.Path)
			}
			if op.IfVersion && n.version != op.Node.Version {
				return fmt.Errorf("%w: %s is at version %d, not %d", baton.ErrConflict, op.Node.Path, n.version, op.Node.Version)
			}
		case backend.OpCreate:
			if err := validDir(op.Dir, op.Flags); err != nil {
				return err
			}
			if op.Flags&backend.Sequential == 0 && c.st.kids[op.Dir][op.Name] != nil {
				return fmt.Errorf("%w: %s", baton.ErrExists, backend.Join(op.Dir, op.Name))
			}
		default:
			return fmt.Errorf("memory: unknown op %d", op.Kind)
		}
	}
	for _, op := range ops {
		switch op.Kind {
		case backend.OpSet:
			n := c.st.lookup(op.Node)
			n.data = append([]byte(nil), op.Data...)
			n.version++
			c.st.zxid++
			c.st.fire(n.path(), nil, "data")
		case backend.OpDelete:
			c.st.remove(c.st.lookup(op.Node), c)
		case backend.OpCreate:
			if _, err := c.st.put(op.Dir, op.Name, op.Data, op.Flags, c.id, newUID()); err != nil {
				return err
			}
		}
	}
	return nil
}
