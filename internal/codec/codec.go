// Package codec reads and writes the data of Curator's counters, as
// baton's SharedCount and AtomicLong, the layout reader and the command
// line share them.
package codec

import (
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
