package zk

import (
	"encoding/binary"
	"net"
	"sync"
)

// replyConn is a session's connection, wrapped above TLS by the fault
// injectors of these tests (replyDropper, replyHolder): it reads the
// ZooKeeper frames going by both ways, marks the requests that pick
// chooses, and once a marked request's reply has arrived and hit says so,
// runs act before that read returns (an error from act is the read's).
type replyConn struct {
	net.Conn
	pick func(op int32) bool
	hit  func(reply []byte) bool
	act  func(c net.Conn) error

	out, in framer // each used by one goroutine

	mu     sync.Mutex
	marked map[int32]bool // xids of marked requests awaiting replies
}

func newReplyConn(c net.Conn, pick func(op int32) bool, hit func(reply []byte) bool, act func(c net.Conn) error) *replyConn {
	rc := &replyConn{Conn: c, pick: pick, hit: hit, act: act, marked: map[int32]bool{}}
	rc.out.handshake, rc.in.handshake = true, true
	return rc
}

func (c *replyConn) Write(p []byte) (int, error) {
	c.out.feed(p, func(body []byte, handshake bool) {
		// RequestHeader: xid int32, type int32.
		if handshake || len(body) < 8 {
			return
		}
		if c.pick(int32(binary.BigEndian.Uint32(body[4:]))) {
			c.mu.Lock()
			c.marked[int32(binary.BigEndian.Uint32(body))] = true
			c.mu.Unlock()
		}
	})
	return c.Conn.Write(p)
}

func (c *replyConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	hit := false
	c.in.feed(p[:n], func(body []byte, handshake bool) {
		// ReplyHeader: xid int32, zxid int64, err int32.
		if handshake || len(body) < 16 {
			return
		}
		xid := int32(binary.BigEndian.Uint32(body))
		c.mu.Lock()
		marked := c.marked[xid]
		delete(c.marked, xid)
		c.mu.Unlock()
		if marked && c.hit(body) {
			hit = true
		}
	})
	if hit {
		if err := c.act(c.Conn); err != nil {
			return 0, err
		}
	}
	return n, err
}
