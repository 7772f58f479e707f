package zk

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// maxCreateAttempts bounds one Create's attempts (missing parents,
// connection losses).
const maxCreateAttempts = 10

// cleanupTimeout bounds the removal of a node whose create was abandoned.
const cleanupTimeout = 5 * time.Second

// Create makes a child of dir. A sequential node of kind K is named
// Curator's way, "_c_<uuid>-<marker><seq>", and the uuid, fresh for each
// Create, is what makes it exactly-once: if the connection is lost before
// the reply, we look for our uuid among the children once reconnected
// (Curator's protected mode). The node's czxid, its fencing token, is read
// from the create reply's header, so a create is one request.
//
// Queue items ("qn-<seq>", ZooKeeper's DistributedQueue layout) carry no
// id: if the connection is lost before their reply, Create does not retry
// and returns an error saying the outcome is unknown.
func (c *conn) Create(ctx context.Context, dir, kind string, data []byte, f backend.Flags) (backend.Node, error) {
	nn, err := c.newNode(dir, kind, data, f)
	if err != nil {
		return backend.Node{}, err
	}
	flags := createFlags(f)
	for attempt := 0; attempt < maxCreateAttempts; attempt++ {
		var got string
		err = c.callThen(ctx, func() error {
			var e error
			got, e = c.zc.Create(nn.path, notNull(nn.data), flags, c.acl)
			return e
		}, func(err error) { c.abandonCreate(got, nn.dir, nn.id, err) })
		if err == nil {
			n, err := c.created(ctx, got, f)
			if err != nil {
				return n, err
			}
			return c.verifyCreated(ctx, nn.dir, n)
		}
		if n, settled, err := c.createFailed(ctx, nn, attempt, err); settled {
			return n, err
		}
	}
	return backend.Node{}, fmt.Errorf("zk: create in %s: gave up after %d attempts: %w", nn.dir, maxCreateAttempts, err)
}

// newNode is one Create's node: where it goes, what it holds and, for a
// sequential node, the per-create id that finds it again after a lost
// reply.
type newNode struct {
	dir, path string // path is the server path, before any sequence suffix
	data      []byte
	f         backend.Flags
	id        string
	protected bool // its name carries id (Curator's protected mode)
}

func (c *conn) newNode(dir, kind string, data []byte, f backend.Flags) (newNode, error) {
	dir, err := topDir(dir, f)
	if err != nil {
		return newNode{}, err
	}
	nn := newNode{dir: dir, data: data, f: f}
	name := kind
	if f&backend.Sequential != 0 {
		nn.id = newID()
		prefix, prot, ok := sequentialName(kind, nn.id)
		if !ok {
			return newNode{}, fmt.Errorf("%w: no sequential node kind %q", baton.ErrInvalidName, kind)
		}
		name, nn.protected = prefix, prot
		if _, item := curatorItemName(kind); item {
			nn.data = encodeItem(data)
		}
	} else if err := checkElem(kind); err != nil {
		return newNode{}, err
	}
	nn.path = c.abs(backend.Join(dir, name))
	if err := c.checkCreate(nn.path, nn.data, f); err != nil {
		return newNode{}, err
	}
	return nn, nil
}

// createFailed handles a create try that failed with err: settled says
// Create returns n and rerr, else it tries again.
func (c *conn) createFailed(ctx context.Context, nn newNode, attempt int, err error) (n backend.Node, settled bool, rerr error) {
	switch {
	case errors.Is(err, baton.ErrNotFound):
		if err := c.makeParents(ctx, c.abs(nn.dir)); err != nil {
			return backend.Node{}, true, err
		}
		return backend.Node{}, false, nil
	case errors.Is(err, errConnLoss):
		if nn.f&backend.Sequential != 0 && !nn.protected {
			return backend.Node{}, true, c.unknown(ctx, "create in "+nn.dir, err)
		}
		if err := c.waitUp(ctx); err != nil {
			return backend.Node{}, true, err
		}
		if !nn.protected {
			return backend.Node{}, false, nil
		}
		n, found, err := c.findProtected(ctx, nn.dir, nn.id)
		if err != nil {
			return backend.Node{}, true, err
		}
		if found {
			n, err := c.verifyCreated(ctx, nn.dir, n)
			return n, true, err
		}
		return backend.Node{}, false, nil
	case errors.Is(err, baton.ErrExists) && attempt > 0 && nn.f&backend.Ephemeral != 0:
		// An earlier attempt whose reply was lost may have made it.
		_, n, gerr := c.Get(ctx, c.rel(nn.path))
		if gerr == nil && n.Owner == c.ID() {
			n, err := c.verifyCreated(ctx, nn.dir, n)
			return n, true, err
		}
		return backend.Node{}, true, err
	case errors.Is(err, gozk.ErrNoAuth):
		return backend.Node{}, true, fmt.Errorf("zk: create in %s: its ACL does not let this session's identity create nodes there; it belongs to another identity (see WithAuth): %w: %w", nn.dir, baton.ErrPermission, gozk.ErrNoAuth)
	case errors.Is(err, gozk.ErrInvalidACL):
		return backend.Node{}, true, fmt.Errorf("zk: create in %s: %w", nn.dir, err)
	default:
		return backend.Node{}, true, err
	}
}

// checkCreate refuses a create whose node path (server path, before any
// sequence suffix) or request would exceed ZooKeeper's limits.
func (c *conn) checkCreate(path string, data []byte, f backend.Flags) error {
	n := len(path)
	if f&backend.Sequential != 0 {
		n += seqWidth + 1
	}
	if n > MaxPathLen+len(c.chroot) {
		return fmt.Errorf("%w: the node created in %s would have a path of %d bytes, over %d", baton.ErrInvalidName, short(c.rel(parent(path))), n-len(c.chroot), MaxPathLen)
	}
	return checkSize("create in "+short(c.rel(parent(path))), n+len(data)+aclLen(c.acl)+requestOverhead)
}

func createFlags(f backend.Flags) int32 {
	var flags int32
	if f&backend.Ephemeral != 0 {
		flags |= gozk.FlagEphemeral
	}
	if f&backend.Sequential != 0 {
		flags |= gozk.FlagSequence
	}
	return flags
}

// created builds the Node of a node we just created at (server) path.
func (c *conn) created(ctx context.Context, path string, f backend.Flags) (backend.Node, error) {
	n := c.statNode(path, nil)
	if z, ok := c.w.takeZxid(path); ok {
		n.Token = z
	} else {
		// The tap missed the reply header (never expected): ask.
		ok, st, err := c.exists(ctx, path)
		if err != nil {
			return backend.Node{}, err
		}
		if !ok {
			return backend.Node{}, fmt.Errorf("%w: %s vanished after its create", baton.ErrNotFound, n.Path)
		}
		n.Token = st.Czxid
	}
	if f&backend.Ephemeral != 0 {
		n.Owner = c.ID()
	}
	return n, nil
}

// findProtected looks for the node of create attempt id among the children
// of dir. A node of ours that belongs to another session (ours expired
// meanwhile) is removed and not reported.
func (c *conn) findProtected(ctx context.Context, dir, id string) (backend.Node, bool, error) {
	names, err := c.children(ctx, c.abs(dir))
	if errors.Is(err, baton.ErrNotFound) {
		return backend.Node{}, false, nil
	}
	if err != nil {
		return backend.Node{}, false, err
	}
	mark := protectedPrefix + id + "-"
	for _, name := range names {
		if !strings.HasPrefix(name, mark) {
			continue
		}
		path := c.abs(backend.Join(dir, name))
		ok, st, err := c.exists(ctx, path)
		if err != nil {
			return backend.Node{}, false, err
		}
		if !ok {
			return backend.Node{}, false, nil
		}
		c.w.forget(path)
		c.mu.Lock()
		mine := st.EphemeralOwner == 0 || st.EphemeralOwner == c.id
		c.mu.Unlock()
		if !mine {
			_ = c.retry(ctx, func() error { return c.zc.Delete(path, -1) })
			return backend.Node{}, false, nil
		}
		return c.statNode(path, st), true, nil
	}
	return backend.Node{}, false, nil
}

// abandonCreate removes the node of a create whose caller gave up (ctx
// ended) while it was in flight, so a cancelled Create leaves nothing.
func (c *conn) abandonCreate(got, dir, id string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	switch {
	case err == nil:
		c.w.forget(got)
		_ = c.retry(ctx, func() error { return c.zc.Delete(got, -1) })
	case errors.Is(c.mapErr(err), errConnLoss) && id != "":
		if c.waitUp(ctx) != nil {
			return
		}
		if n, found, _ := c.findProtected(ctx, dir, id); found {
			_ = c.retry(ctx, func() error { return c.zc.Delete(c.abs(n.Path), -1) })
		}
	}
}

// makeParents creates dir and its missing ancestors as container nodes
// (server paths).
func (c *conn) makeParents(ctx context.Context, dir string) error {
	if dir == "/" {
		return nil
	}
	for i := 0; i < 3; i++ {
		err := c.retry(ctx, func() error {
			_, e := c.zc.CreateContainer(dir, []byte{}, gozk.FlagContainer, c.acl)
			return e
		})
		switch {
		case err == nil, errors.Is(err, baton.ErrExists):
			return nil
		case errors.Is(err, baton.ErrNotFound):
			if err := c.makeParents(ctx, parent(dir)); err != nil {
				return err
			}
		default:
			return err
		}
	}
	return fmt.Errorf("zk: could not create parents of %s", c.rel(dir))
}

// callThen is call for a request whose result matters even when ctx ends
// first: then (run in the background) receives it.
func (c *conn) callThen(ctx context.Context, f func() error, then func(error)) error {
	if err := c.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if ctx.Done() == nil {
		return c.mapErr(f()) // nothing can make us give up: see call
	}
	var mu sync.Mutex
	gaveUp := false
	ch := make(chan error, 1)
	go func() {
		err := f()
		mu.Lock()
		g := gaveUp
		mu.Unlock()
		if g {
			then(err)
			return
		}
		ch <- err
	}()
	select {
	case err := <-ch:
		return c.mapErr(err)
	case <-c.done:
		return c.Err()
	case <-ctx.Done():
		mu.Lock()
		gaveUp = true
		mu.Unlock()
		select {
		case err := <-ch:
			go then(err)
		default:
		}
		return ctx.Err()
	}
}

// newID is a create attempt's id: a random UUID, as Curator uses.
func newID() string { return uuid.NewString() }

// notNull turns nil data into empty bytes. go-zookeeper sends a nil slice
// as null data, which peers trip over: kazoo's Semaphore and Lock decode
// every contender's data and fail on None.
func notNull(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}
