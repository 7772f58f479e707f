package zk

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
)

// opMulti is a ZooKeeper multi request (baton's Commit).
const opMulti = 14

// replyHolder holds back, once armed, the reply to the next multi request
// (a Commit) after the server sent it: the server has applied the
// commit, and the client does not see its outcome until release. It
// wraps every connection of one session (withHolder).
type replyHolder struct {
	armed   atomic.Bool
	held    chan struct{} // closed once a reply is held
	release chan struct{} // close to let it through
	once    sync.Once
}

func newReplyHolder() *replyHolder {
	return &replyHolder{held: make(chan struct{}), release: make(chan struct{})}
}

// withHolder makes the session's connections go through h.
func withHolder(h *replyHolder) Option { return func(o *options) { o.wrap = h.wrap } }

// holdNext arms h for the next multi request sent.
func (h *replyHolder) holdNext() { h.armed.Store(true) }

func (h *replyHolder) wrap(c net.Conn) net.Conn {
	hc := &holdConn{Conn: c, h: h, multis: map[int32]bool{}}
	hc.out.handshake, hc.in.handshake = true, true
	return hc
}

type holdConn struct {
	net.Conn
	h       *replyHolder
	out, in framer // each used by one goroutine

	mu     sync.Mutex
	multis map[int32]bool // xids of armed multis awaiting replies
}

func (c *holdConn) Write(p []byte) (int, error) {
	c.out.feed(p, func(body []byte, handshake bool) {
		if handshake || len(body) < 8 {
			return
		}
		if int32(binary.BigEndian.Uint32(body[4:])) == opMulti && c.h.armed.CompareAndSwap(true, false) {
			c.mu.Lock()
			c.multis[int32(binary.BigEndian.Uint32(body))] = true
			c.mu.Unlock()
		}
	})
	return c.Conn.Write(p)
}

func (c *holdConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	hold := false
	c.in.feed(p[:n], func(body []byte, handshake bool) {
		if handshake || len(body) < 16 {
			return
		}
		xid := int32(binary.BigEndian.Uint32(body))
		c.mu.Lock()
		hold = hold || c.multis[xid]
		delete(c.multis, xid)
		c.mu.Unlock()
	})
	if hold {
		c.h.once.Do(func() { close(c.h.held) })
		<-c.h.release
	}
	return n, err
}
