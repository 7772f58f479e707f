package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/layout"
	"github.com/batonhq/baton/memory"
)

// getCounter counts the Gets that reach the store.
type getCounter struct {
	backend.Conn
	gets int
}

func (c *getCounter) Get(ctx context.Context, path string) ([]byte, backend.Node, error) {
	c.gets++
	return c.Conn.Get(ctx, path)
}

// The wait display reads a line's nodes once: reading a line of 30 again
// lists it but reads only the nodes that joined since, and forgets those
// that left.
func TestLineReadsEachNodeOnce(t *testing.T) {
	ctx := context.Background()
	s, err := memory.New().Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	c := &getCounter{Conn: s.Conn()}
	once := &onceConn{Conn: c, listed: map[string]listedNode{}}
	var line []backend.Node
	for i := range 30 {
		n, err := s.Conn().Create(ctx, "/once/locks", backend.KindLock, fmt.Appendf(nil, "waiter %d", i), backend.Ephemeral|backend.Sequential)
		if err != nil {
			t.Fatal(err)
		}
		line = append(line, n)
	}
	read := func() layout.Listing {
		t.Helper()
		c.gets = 0
		l, err := layout.Read(ctx, once, layout.StoreMemory, "/once")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := read()
	if got := len(first.Dirs[layout.DirLocks]); got != 30 {
		t.Fatalf("read %d nodes, want 30", got)
	}
	if c.gets < 30 {
		t.Fatalf("the first read got %d nodes' data, want all 30", c.gets)
	}
	base := read()
	if c.gets > 2 {
		t.Fatalf("a second read of a line of 30 got %d nodes' data, want at most the name's and its directory's", c.gets)
	}
	again := c.gets
	if err := s.Conn().Delete(ctx, line[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conn().Create(ctx, "/once/locks", backend.KindLock, []byte("late"), backend.Ephemeral|backend.Sequential); err != nil {
		t.Fatal(err)
	}
	l := read()
	kids := l.Dirs[layout.DirLocks]
	if c.gets != again+1 || len(kids) != 30 || string(kids[29].Data) != "late" || string(kids[0].Data) != "waiter 1" {
		t.Fatalf("after one left and one joined: %d reads (want %d), %d nodes, first %q, last %q", c.gets, again+1, len(kids), kids[0].Data, kids[29].Data)
	}
	if n := len(once.listed); n > 30+len(base.Dirs[""]) {
		t.Fatalf("%d nodes remembered for a line of 30", n)
	}
}
