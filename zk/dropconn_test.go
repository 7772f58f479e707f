package zk

import (
	"encoding/binary"
	"errors"
	"net"
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

// wrap loses the reply to a successful plain create once d is armed,
// closing its connection.
func (d *replyDropper) wrap(c net.Conn) net.Conn {
	return newReplyConn(c,
		func(op int32) bool { return op == opCreate },
		func(reply []byte) bool {
			return binary.BigEndian.Uint32(reply[12:]) == 0 && d.armed.CompareAndSwap(true, false)
		},
		func(c net.Conn) error {
			_ = c.Close()
			return errors.New("zk test: create reply dropped with its connection")
		})
}
