package zk

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// MaxPathLen is the longest path baton accepts, in bytes. ZooKeeper sets
// no limit of its own, but every request, reply and watch re-registration
// must fit in its jute.maxbuffer (1 MiB by default), and listings carry
// the names of all siblings: paths this long already strain both.
const MaxPathLen = 32 << 10

// MaxRequestLen is the largest request ZooKeeper accepts by default
// (jute.maxbuffer, 0xfffff bytes): node data, path and ACL together, or
// all the operations of one transaction. The server drops the connection
// of a client that sends more, so baton refuses such a request up front
// with ErrTooLarge.
const MaxRequestLen = 0xfffff

// ErrTooLarge reports a request larger than MaxRequestLen.
var ErrTooLarge = errors.New("zk: request larger than ZooKeeper accepts (jute.maxbuffer)")

// requestOverhead bounds a request's bytes besides its path, data and ACL:
// frame length, header, length prefixes, flags (and a multi's op header).
const requestOverhead = 64

// aclLen is the encoded size of acl.
func aclLen(acl []gozk.ACL) int {
	n := 4
	for _, a := range acl {
		n += 12 + len(a.Scheme) + len(a.ID)
	}
	return n
}

// checkSize refuses a request of n bytes over MaxRequestLen.
func checkSize(what string, n int) error {
	if n > MaxRequestLen {
		return fmt.Errorf("%w: %s would send %d bytes, over the %d the server accepts by default", ErrTooLarge, what, n, MaxRequestLen)
	}
	return nil
}

// short abbreviates a long path for error messages.
func short(p string) string {
	if len(p) <= 80 {
		return fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf("%q… (%d bytes)", p[:60], len(p))
}

// checkPath reports why p is not a usable absolute ZooKeeper path: empty,
// relative, a trailing or doubled slash, a "." or ".." element, a
// character the server refuses, or longer than MaxPathLen.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty path", baton.ErrInvalidName)
	case len(p) > MaxPathLen:
		return fmt.Errorf("%w: path %s is longer than %d bytes", baton.ErrInvalidName, short(p), MaxPathLen)
	case p[0] != '/':
		return fmt.Errorf("%w: path %q does not start with /", baton.ErrInvalidName, p)
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("%w: path %q ends with /", baton.ErrInvalidName, p)
	}
	for _, elem := range strings.Split(p[1:], "/") {
		if err := checkElem(elem); err != nil {
			return fmt.Errorf("%w in path %s", err, short(p))
		}
	}
	return nil
}

// AbsolutePaths says ZooKeeper names nodes by absolute paths: a recipe
// name "jobs/x" is the znode "/jobs/x", as Curator, kazoo and go-zookeeper
// name it (baton.CleanName's rule).
func (c *conn) AbsolutePaths() bool { return true }

var _ backend.AbsolutePaths = (*conn)(nil)

// userPath is p as ZooKeeper names it, checked: every path a Conn method
// takes goes through it. ZooKeeper's paths are absolute, so a path without
// its leading "/" ("jobs/x", as a recipe name may be written) is the one
// with it (baton.AbsolutePath, baton.CleanName's rule). Every Node the
// Conn returns has the absolute path. "" is no path (see topDir).
func userPath(p string) (string, error) {
	if p == "" {
		return "", checkPath(p)
	}
	p = backend.AbsolutePath(p)
	return p, checkPath(p)
}

// topDir is the parent of a node to create: "" is the top of the store
// for a plain node (a Barrier named "deploy", as on etcd), the root; a
// sequential node needs a real parent.
func topDir(dir string, f backend.Flags) (string, error) {
	if dir == "" && f&backend.Sequential == 0 {
		return "/", nil
	}
	return userPath(dir)
}

// userNode is n with its Path as userPath makes it.
func userNode(n backend.Node) (backend.Node, error) {
	var err error
	n.Path, err = userPath(n.Path)
	return n, err
}

// checkElem reports why s is not a usable node name.
func checkElem(s string) error {
	switch s {
	case "":
		return fmt.Errorf("%w: empty name", baton.ErrInvalidName)
	case ".", "..":
		return fmt.Errorf("%w: name %s", baton.ErrInvalidName, short(s))
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: name %s is not UTF-8", baton.ErrInvalidName, short(s))
	}
	for _, r := range s {
		switch {
		case r == '/':
			return fmt.Errorf("%w: name %s contains /", baton.ErrInvalidName, short(s))
		// ZooKeeper's PathUtils refuses these UTF-16 code units: C0 and C1
		// controls, surrogates (so every character above U+FFFF, such as
		// emoji), private use, and specials.
		case r <= 0x1f, r >= 0x7f && r <= 0x9f, r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0:
			return fmt.Errorf("%w: name %s contains character %U, which ZooKeeper refuses", baton.ErrInvalidName, short(s), r)
		}
	}
	return nil
}

// abs maps a user path to the server's, under the chroot.
func (c *conn) abs(p string) string {
	if c.chroot == "" {
		return p
	}
	if p == "/" {
		return c.chroot
	}
	return c.chroot + p
}

// rel maps a server path back to the user's.
func (c *conn) rel(p string) string {
	if c.chroot == "" {
		return p
	}
	p = strings.TrimPrefix(p, c.chroot)
	if p == "" {
		return "/"
	}
	return p
}

// base is the last element of p.
func base(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// parent is p without its last element.
func parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}
