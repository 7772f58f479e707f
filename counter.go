package baton

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadCounter means a counter's node holds data that is not a counter:
// not 4 bytes (SharedCount) or not 0 or 8 bytes (AtomicLong).
var ErrBadCounter = errors.New("baton: not a counter")

// ParseCount reads a SharedCount's node data: a 4-byte big-endian signed
// int, as Curator's SharedCount writes it.
func ParseCount(b []byte) (int32, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("%w: %d bytes, want 4 (a big-endian int32)", ErrBadCounter, len(b))
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// CountBytes is the node data of a SharedCount of v.
func CountBytes(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// ParseLong reads an AtomicLong's node data: an 8-byte big-endian signed
// long, as Curator's DistributedAtomicLong writes it; empty data (a node
// made without a value) is 0, as Curator reads it.
func ParseLong(b []byte) (int64, error) {
	switch len(b) {
	case 0:
		return 0, nil
	case 8:
		return int64(binary.BigEndian.Uint64(b)), nil
	}
	return 0, fmt.Errorf("%w: %d bytes, want 8 (a big-endian int64)", ErrBadCounter, len(b))
}

// LongBytes is the node data of an AtomicLong of v.
func LongBytes(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

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
func (c counterNode) read(ctx context.Context, seed []byte) ([]byte, Node, bool, error) {
	if c.bad != nil {
		return nil, Node{}, false, c.bad
	}
	for range maxCounterTries {
		data, n, err := c.s.conn.Get(ctx, c.name)
		if err == nil {
			return data, n, true, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, Node{}, false, err
		}
		if seed == nil {
			return nil, Node{}, false, nil
		}
		dir, base, err := splitName(c.name)
		if err != nil {
			return nil, Node{}, false, err
		}
		if _, err := c.s.conn.Create(ctx, dir, base, seed, 0); err != nil && !errors.Is(err, ErrExists) {
			return nil, Node{}, false, err
		}
	}
	return nil, Node{}, false, fmt.Errorf("%s: the node keeps going", c.name)
}

// set writes data into n; with ifVersion only if n's data is still at
// n.Version (else an error wrapping ErrConflict).
func (c counterNode) set(ctx context.Context, n Node, data []byte, ifVersion bool) error {
	if c.bad != nil {
		return c.bad
	}
	return c.s.conn.Commit(ctx, Node{}, Op{Kind: OpSet, Node: n, Data: data, IfVersion: ifVersion})
}

// maxCounterTries bounds the reads of a node that is deleted as fast as it
// is made.
const maxCounterTries = 10
