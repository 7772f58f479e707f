package zk

import (
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

// wrap holds back the reply to the next multi request once h is armed.
func (h *replyHolder) wrap(c net.Conn) net.Conn {
	return newReplyConn(c,
		func(op int32) bool { return op == opMulti && h.armed.CompareAndSwap(true, false) },
		func([]byte) bool { return true },
		func(net.Conn) error {
			h.once.Do(func() { close(h.held) })
			<-h.release
			return nil
		})
}
