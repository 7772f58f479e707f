package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// dialWatch remembers why the client's last connection to a server
// failed. The gRPC client retries a failed connection until the deadline
// and then says only "context deadline exceeded"; Open names the last
// reason instead, as the ZooKeeper and Redis backends do.
type dialWatch struct {
	plain bool // the client does not use TLS

	mu   sync.Mutex
	last error
}

func (w *dialWatch) set(err error) {
	w.mu.Lock()
	w.last = err
	w.mu.Unlock()
}

// lastErr is the last connection failure seen, or nil.
func (w *dialWatch) lastErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// dial is the client's dialer: a plain TCP (or unix socket) connection
// whose failure is remembered.
func (w *dialWatch) dial(ctx context.Context, addr string) (net.Conn, error) {
	network, a := "tcp", addr
	if p, ok := strings.CutPrefix(addr, "unix://"); ok {
		network, a = "unix", p
	} else if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, a = "unix", p
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, a)
	if err != nil {
		w.set(err)
		return nil, err
	}
	if !w.plain {
		return c, nil
	}
	return &watchedConn{Conn: c, w: w, addr: a}, nil
}

// watchedConn looks at the first bytes a server sends a plain-text
// client: a TLS record means the server wants TLS, and a connection
// closed before any answer means something other than etcd listens.
type watchedConn struct {
	net.Conn
	w    *dialWatch
	addr string

	once sync.Once
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.once.Do(func() {
		switch {
		case n > 0 && (p[0] == 0x15 || p[0] == 0x16): // TLS alert or handshake record
			c.w.set(fmt.Errorf("the server at %s answered in TLS (use https://, or etcds:// on the command line)", c.addr))
		case n == 0 && err != nil:
			c.w.set(fmt.Errorf("the server at %s closed the connection before answering (is it an etcd client port, and does it want TLS?): %w", c.addr, err))
		}
	})
	return n, err
}

// explain adds the last connection failure to err when err says only
// that the servers could not be reached in time.
func (w *dialWatch) explain(err error) error {
	if w == nil || err == nil {
		return err
	}
	last := w.lastErr()
	if last == nil || !unreached(err) {
		return err
	}
	return fmt.Errorf("%w (last connection error: %v)", err, last)
}

// unreached reports whether err is the client giving up on reaching the
// servers: a deadline or gRPC's Unavailable.
func unreached(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if s, ok := status.FromError(err); ok {
		return s.Code() == codes.DeadlineExceeded || s.Code() == codes.Unavailable
	}
	return false
}
