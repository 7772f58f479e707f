package zk

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton"
)

// checkPath reports why p is not a usable absolute ZooKeeper path: empty,
// relative, a trailing or doubled slash, a "." or ".." element, or a
// character the server refuses.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty path", baton.ErrInvalidName)
	case p[0] != '/':
		return fmt.Errorf("%w: path %q does not start with /", baton.ErrInvalidName, p)
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("%w: path %q ends with /", baton.ErrInvalidName, p)
	}
	for _, elem := range strings.Split(p[1:], "/") {
		if err := checkElem(elem); err != nil {
			return fmt.Errorf("%w in path %q", err, p)
		}
	}
	return nil
}

// checkElem reports why s is not a usable node name.
func checkElem(s string) error {
	switch s {
	case "":
		return fmt.Errorf("%w: empty name", baton.ErrInvalidName)
	case ".", "..":
		return fmt.Errorf("%w: name %q", baton.ErrInvalidName, s)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: name %q is not UTF-8", baton.ErrInvalidName, s)
	}
	for _, r := range s {
		switch {
		case r == '/':
			return fmt.Errorf("%w: name %q contains /", baton.ErrInvalidName, s)
		case r <= 0x1f, r >= 0x7f && r <= 0x9f, r >= 0xf000 && r <= 0xf8ff, r >= 0xfff0 && r <= 0xffff:
			return fmt.Errorf("%w: name %q contains character %U", baton.ErrInvalidName, s, r)
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
