package baton

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/codec"
)

// ErrBadCounter means a counter's node holds data that is not a counter:
// not 4 bytes (SharedCount) or not 0 or 8 bytes (AtomicLong).
var ErrBadCounter = codec.ErrBadCounter

// counterNode is the persistent node of a counter named name: read, made
// with seed when missing.
type counterNode struct {
	s    *Session
	name string
	bad  error // from CleanName: every call returns it
}

// newCounterNode is the counter node on name, cleaned (CleanName).
func newCounterNode(s *Session, name string) counterNode {
	name, bad := cleanOrKeep(s, name)
	return counterNode{s: s, name: name, bad: bad}
}

// read returns the node's data and node, making it with seed first if it
// is missing (and seed is not nil).
func (c counterNode) read(ctx context.Context, seed []byte) ([]byte, backend.Node, bool, error) {
	if c.bad != nil {
		return nil, backend.Node{}, false, c.bad
	}
	for range maxCounterTries {
		data, n, err := c.s.conn.Get(ctx, c.name)
		if err == nil {
			return data, n, true, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, backend.Node{}, false, err
		}
		if seed == nil {
			return nil, backend.Node{}, false, nil
		}
		dir, base, err := splitName(c.name)
		if err != nil {
			return nil, backend.Node{}, false, err
		}
		if _, err := c.s.conn.Create(ctx, dir, base, seed, 0); err != nil && !errors.Is(err, ErrExists) {
			return nil, backend.Node{}, false, err
		}
	}
	return nil, backend.Node{}, false, fmt.Errorf("%s: the node keeps going", c.name)
}

// set writes data into n; with ifVersion only if n's data is still at
// n.Version (else an error wrapping ErrConflict).
func (c counterNode) set(ctx context.Context, n backend.Node, data []byte, ifVersion bool) error {
	if c.bad != nil {
		return c.bad
	}
	return c.s.conn.Commit(ctx, backend.Node{}, backend.Op{Kind: backend.OpSet, Node: n, Data: data, IfVersion: ifVersion})
}

// maxCounterTries bounds the reads of a node that is deleted as fast as it
// is made.
const maxCounterTries = 10
