package zk

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
)

// replyDropper injects the fault the exactly-once rule is about: the
// server applies a create, and its reply is lost with the connection. It
// wraps every connection of one session (withDropper), above TLS, and
// reads the ZooKeeper frames going by.
type replyDropper struct{ armed atomic.Bool }

// withDropper makes the session's connections go through d.
func withDropper(d *replyDropper) Option { return func(o *options) { o.wrap = d.wrap } }

// dropNext arms d: the next successful plain create's reply is lost, and
// its connection closed.
func (d *replyDropper) dropNext() { d.armed.Store(true) }

func (d *replyDropper) wrap(c net.Conn) net.Conn {
	dc := &dropConn{Conn: c, d: d, creates: map[int32]bool{}}
	dc.out.handshake, dc.in.handshake = true, true
	return dc
}

type dropConn struct {
	net.Conn
	d       *replyDropper
	out, in framer // each used by one goroutine

	mu      sync.Mutex
	creates map[int32]bool // xids of plain creates awaiting replies
}

func (c *dropConn) Write(p []byte) (int, error) {
	c.out.feed(p, func(body []byte, handshake bool) {
		if handshake || len(body) < 8 {
			return
		}
		if int32(binary.BigEndian.Uint32(body[4:])) == opCreate {
			c.mu.Lock()
			c.creates[int32(binary.BigEndian.Uint32(body))] = true
			c.mu.Unlock()
		}
	})
	return c.Conn.Write(p)
}

func (c *dropConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	drop := false
	c.in.feed(p[:n], func(body []byte, handshake bool) {
		// ReplyHeader: xid int32, zxid int64, err int32.
		if handshake || len(body) < 16 {
			return
		}
		xid := int32(binary.BigEndian.Uint32(body))
		c.mu.Lock()
		create := c.creates[xid]
		delete(c.creates, xid)
		c.mu.Unlock()
		if create && binary.BigEndian.Uint32(body[12:]) == 0 && c.d.armed.CompareAndSwap(true, false) {
			drop = true
		}
	})
	if drop {
		_ = c.Conn.Close()
		return 0, errors.New("zk test: create reply dropped with its connection")
	}
	return n, err
}
