package baton

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/batonhq/baton/backend"
)

// SessionFunc opens a new session. PersistentNode and GroupMember call it
// for their first session and again after each session is lost, and own
// every session it returns: they close it when it is lost or when they
// stop.
type SessionFunc func(ctx context.Context) (*Session, error)

// PersistentNode keeps one node at a fixed path, with given data, for as
// long as Run runs, as Apache Curator's PersistentNode does: if the node is
// deleted (by anyone) it is created again, and if its session is lost (an
// ephemeral node goes with it) a new session is opened and the node created
// again on it.
//
// If the path is taken when the node is to be created, the node there is
// adopted as Curator adopts it: its data is set to ours and it is watched;
// when it goes (an ephemeral node of a session that ended, for example),
// ours is created in its place.
//
// A PersistentNode must not be copied after first use; Run must not be
// called on it twice at once.
type PersistentNode struct {
	open      SessionFunc
	path      string
	bad       error // from CleanName: Run returns it
	ephemeral bool

	mu      sync.Mutex
	data    []byte
	node    backend.Node // the node while it exists (Path == "" otherwise)
	sess    *Session     // the session Run works on
	changed chan struct{}
}

// NewPersistentNode returns a node kept at path (a full ZooKeeper path, an
// etcd key) carrying data; with ephemeral it is bound to the session of
// the moment. It does no I/O.
func NewPersistentNode(open SessionFunc, path string, data []byte, ephemeral bool) *PersistentNode {
	path, bad := cleanOrKeep(nil, path)
	return &PersistentNode{open: open, path: path, bad: bad, data: bytes.Clone(data), ephemeral: ephemeral, changed: make(chan struct{})}
}

// Path is the node's path.
func (p *PersistentNode) Path() string { return p.path }

// Run creates the node and keeps it there until ctx ends; then it deletes
// the node (that incarnation), closes its session and returns ctx.Err().
// Failures of the store are retried with a backoff, each lost session
// replaced by a new one from the SessionFunc. Run returns early only with
// an error wrapping ErrInvalidName (a path the store cannot hold).
func (p *PersistentNode) Run(ctx context.Context) error {
	if p.bad != nil {
		return p.bad
	}
	// A path of one element ("x", "/x") is a node at the top: its dir is
	// "" or "/" as written (CleanName's rule).
	dir, name := path.Split(p.path)
	dir = trimSlash(dir)
	if name == "" {
		return fmt.Errorf("%w: persistent node path %q has no parent", ErrInvalidName, p.path)
	}
	var s *Session
	defer func() {
		n := p.set(backend.Node{}, nil)
		if s == nil {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if n.Path != "" && s.Err() == nil {
			_ = s.conn.Delete(cctx, n)
		}
		_ = s.Close(cctx)
	}()
	backoff := newBackoff()
	for ctx.Err() == nil {
		if s == nil || s.Err() != nil {
			if s != nil {
				p.set(backend.Node{}, nil)
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
				_ = s.Close(cctx)
				cancel()
				s = nil
			}
			ns, err := p.open(ctx)
			if err != nil {
				backoff.wait(ctx)
				continue
			}
			s = ns
			p.set(backend.Node{}, s)
		}
		n, err := p.ensure(ctx, s.conn, dir, name)
		if errors.Is(err, ErrInvalidName) {
			return err
		}
		if err != nil {
			if !IsSessionGone(err) {
				backoff.wait(ctx)
			}
			continue
		}
		backoff.reset()
		p.set(n, s)
		// Returns nil when the node goes, an error when the session does
		// (the loop opens another) or ctx ends.
		if err := s.conn.WaitGone(ctx, n); err == nil {
			p.set(backend.Node{}, s)
		}
	}
	return ctx.Err()
}

// ensure creates the node, or adopts the node already at its path by
// setting our data on it.
func (p *PersistentNode) ensure(ctx context.Context, c backend.Conn, dir, name string) (backend.Node, error) {
	var f backend.Flags
	if p.ephemeral {
		f = backend.Ephemeral
	}
	for {
		data := p.Data()
		n, err := c.Create(ctx, dir, name, data, f)
		if !errors.Is(err, ErrExists) {
			return n, err
		}
		got, n, err := c.Get(ctx, p.path)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return backend.Node{}, err
		}
		if bytes.Equal(got, data) {
			return n, nil
		}
		err = c.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpSet, Node: n, Data: data})
		if errors.Is(err, ErrNotFound) || errors.Is(err, backend.ErrGuard) {
			continue
		}
		return n, err
	}
}

// set records the node now at our path (none: a zero Node) and the session
// Run works on, wakes Wait, and returns the node recorded before.
func (p *PersistentNode) set(n backend.Node, s *Session) backend.Node {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.node
	p.node, p.sess = n, s
	close(p.changed)
	p.changed = make(chan struct{})
	return old
}

// Node returns the node while it exists as Run last saw it, and false
// while Run is (re)creating it or not running.
func (p *PersistentNode) Node() (backend.Node, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.node, p.node.Path != ""
}

// Session returns the session Run works on now, or nil.
func (p *PersistentNode) Session() *Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sess
}

// Wait returns the node once it exists (at once if it does), or ctx's
// error.
func (p *PersistentNode) Wait(ctx context.Context) (backend.Node, error) {
	for {
		p.mu.Lock()
		n, ch := p.node, p.changed
		p.mu.Unlock()
		if n.Path != "" {
			return n, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return backend.Node{}, ctx.Err()
		}
	}
}

// Data returns the data the node is kept with.
func (p *PersistentNode) Data() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.data)
}

// SetData changes the node's data: at once on the store if the node exists
// now, and in every node created from now on. An error from the store
// leaves the new data to the next (re)creation.
func (p *PersistentNode) SetData(ctx context.Context, data []byte) error {
	p.mu.Lock()
	p.data = bytes.Clone(data)
	n, s := p.node, p.sess
	p.mu.Unlock()
	if n.Path == "" || s == nil {
		return nil
	}
	err := s.conn.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpSet, Node: n, Data: data})
	if errors.Is(err, ErrNotFound) || errors.Is(err, backend.ErrGuard) {
		return nil // gone: Run creates it again with the new data
	}
	return err
}

func trimSlash(dir string) string {
	if len(dir) > 1 && dir[len(dir)-1] == '/' {
		return dir[:len(dir)-1]
	}
	return dir
}

// backoff spaces out retries after failures: 50 ms doubling to 2 s.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 50 * time.Millisecond} }

func (b *backoff) reset() { b.d = 50 * time.Millisecond }

func (b *backoff) wait(ctx context.Context) {
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	b.d = min(2*b.d, 2*time.Second)
}
