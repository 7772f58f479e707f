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
