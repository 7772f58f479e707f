package etcd_test

import (
	"context"
	"errors"
	"net"
	"sync"
)

// gate partitions one client from the store at the socket level, in
// process: while shut, nothing the client writes leaves it and nothing the
// server sends reaches it (both held, as TCP would hold them, until the
// gate opens again or the connection is closed). It costs nothing while
// open, unlike a proxy hop on every request.
type gate struct {
	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
	hold *hold         // set while the server's bytes are held
}

// hold is one holdReplies: done closes when it ends, cut says how.
type hold struct {
	done chan struct{}
	cut  bool
}

// errReplyCut is what a client reads from a connection whose held replies
// were cut.
var errReplyCut = errors.New("etcd test: replies lost with the connection")

// holdReplies holds every byte the server sends the client from now on
// (requests still go out) until cut, which loses them with the
// connection (the client reads an error; it closes), or release, which
// delivers them. Only the first of cut and release counts.
func (g *gate) holdReplies() (cut, release func()) {
	h := &hold{done: make(chan struct{})}
	g.mu.Lock()
	g.hold = h
	g.mu.Unlock()
	end := func(c bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.hold != h {
			return
		}
		g.hold = nil
		h.cut = c
		close(h.done)
	}
	return func() { end(true) }, func() { end(false) }
}

func (g *gate) held() *hold {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.hold
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

// shut partitions the client; the returned func heals it.
func (g *gate) shut() (heal func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default:
	}
	ch := g.open
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
}

func (g *gate) opened() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// wait blocks until the gate is open, ctx ends or closed is closed.
func (g *gate) wait(ctx context.Context, closed <-chan struct{}) error {
	select {
	case <-g.opened():
		return nil
	case <-closed:
		return net.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dial is a grpc context dialer through the gate: while shut, a new
// connection hangs as if its SYN were dropped.
func (g *gate) dial(ctx context.Context, addr string) (net.Conn, error) {
	if err := g.wait(ctx, nil); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, g: g, closed: make(chan struct{})}, nil
}

type gatedConn struct {
	net.Conn
	g         *gate
	closeOnce sync.Once
	closed    chan struct{}
}

func (c *gatedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if werr := c.g.wait(context.Background(), c.closed); werr != nil {
		return 0, werr
	}
	if h := c.g.held(); h != nil {
		select {
		case <-h.done:
		case <-c.closed:
			return 0, net.ErrClosed
		}
		if h.cut {
			_ = c.Close()
			return 0, errReplyCut
		}
	}
	return n, err
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if err := c.g.wait(context.Background(), c.closed); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c *gatedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
