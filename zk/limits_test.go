package zk

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/zktest"
)

func TestCheckPathCases(t *testing.T) {
	long := "/" + strings.Repeat("a", MaxPathLen)
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/", true}, {"/a/b", true}, {"/é/ü", true}, {"/a.b/..c/c..", true}, {"/\ud7ff", true}, {"/\uf900", true}, {"/\uffef", true},
		{long[:MaxPathLen], true},
		{"", false}, {"a", false}, {"/a/", false}, {"//a", false}, {"/a//b", false},
		{"/.", false}, {"/..", false}, {"/a/./b", false}, {"/a/../b", false}, {"/a/..", false},
		{"/a\x00", false}, {"/a\x01", false}, {"/a\nb", false}, {"/\x7f", false}, {"/\u0085", false}, {"/\u009f", false},
		{"/\ue000", false}, {"/\uf8ff", false}, {"/\ufff0", false}, {"/\ufffd", false}, {"/\U0001F600", false}, {"/\U00010000", false},
		{"/\xff", false}, {"/a\xc3", false},
		{long, false},
	} {
		err := checkPath(tc.path)
		if (err == nil) != tc.ok {
			t.Errorf("checkPath(%s) = %v, want ok=%v", short(tc.path), err, tc.ok)
		}
		if err != nil && (!errors.Is(err, baton.ErrInvalidName) || len(err.Error()) > 300) {
			t.Errorf("checkPath(%s): %v: want a short error wrapping ErrInvalidName", short(tc.path), err)
		}
	}
}

// The characters checkElem refuses are those the real server (or
// go-zookeeper before it) refuses, at every boundary of ZooKeeper's ranges.
func TestCheckElemMatchesServer(t *testing.T) {
	zc := rawConn(t, zktest.Shared(t).Addr())
	// A persistent parent of its own (a container one could vanish under
	// us), left on the test server; the children go with the session.
	root := fmt.Sprintf("/chars-%d", pathSeq.Add(1))
	if _, err := zc.Create(root, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for _, r := range []rune{0x01, 0x1f, 0x20, 0x7e, 0x7f, 0x9f, 0xa0, 0xd7ff, 0xe000, 0xefff, 0xf000, 0xf8ff, 0xf900, 0xffef, 0xfff0, 0xfffd, 0xffff, 0x10000, 0x1f600, 0x10ffff} {
		name := fmt.Sprintf("c-%x-%c", r, r)
		_, serr := zc.Create(root+"/"+name, nil, gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll))
		cerr := checkElem(name)
		if (serr == nil) != (cerr == nil) {
			t.Errorf("%U: server says %v, checkElem says %v", r, serr, cerr)
		}
	}
}

func TestLimits(t *testing.T) {
	ctx := ctxT(t)
	s := openT(t, 0)
	c := s.Conn()
	dir := testPath(t)
	// Just under the limit: the server takes it.
	if _, err := c.Create(ctx, dir, "big", make([]byte, MaxRequestLen-2048), 0); err != nil {
		t.Fatalf("create just under the limit: %v", err)
	}
	// Over it: refused up front, the session unharmed (the server would
	// drop the connection, and every retry with it).
	_, err := c.Create(ctx, dir, "bigger", make([]byte, MaxRequestLen), 0)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("create over the limit: %v, want ErrTooLarge", err)
	}
	t.Log(err)
	half := make([]byte, MaxRequestLen/2+1)
	err = c.Commit(ctx, backend.Node{},
		backend.Op{Kind: backend.OpCreate, Dir: dir, Name: "a", Data: half},
		backend.Op{Kind: backend.OpCreate, Dir: dir, Name: "b", Data: half})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("commit over the limit: %v, want ErrTooLarge", err)
	}
	// A directory so long that a sequential node in it would pass
	// MaxPathLen.
	deep := "/" + strings.Repeat("d", MaxPathLen-20)
	_, err = c.Create(ctx, deep, backend.KindLock, nil, backend.Ephemeral|backend.Sequential)
	if !errors.Is(err, baton.ErrInvalidName) || len(err.Error()) > 300 {
		t.Fatalf("create with a path over MaxPathLen: %v", err)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("session after refused requests: %v", err)
	}
	if _, _, err := c.Get(ctx, dir+"/big"); err != nil {
		t.Fatal(err)
	}
}
