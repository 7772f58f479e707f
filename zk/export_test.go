package zk

import (
	"github.com/batonhq/baton"
)

// sessionOf returns the backend conn under s.
func sessionOf(s *baton.Session) *conn { return s.Conn().(*conn) }

// credentials returns the session id and password s holds.
func credentials(s *baton.Session) (int64, []byte) {
	id, pw, _ := sessionOf(s).w.session()
	return id, pw
}

// dropNextCreateReply makes the next successful create's reply on s be
// lost with its connection, after the server applied it.
func dropNextCreateReply(s *baton.Session) {
	w := sessionOf(s).w
	w.mu.Lock()
	w.dropNext = true
	w.mu.Unlock()
}
