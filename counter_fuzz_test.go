package baton

import (
	"bytes"
	"errors"
	"testing"

	"github.com/batonhq/baton/internal/codec"
)

// FuzzCounterBytes: the counter parsers accept exactly Curator's layouts
// (4 bytes for SharedCount; 0 or 8 for DistributedAtomicLong), round-trip
// what they accept, and reject everything else with ErrBadCounter.
func FuzzCounterBytes(f *testing.F) {
	for _, b := range [][]byte{nil, {0, 0, 0, 5}, {0xff, 0xff, 0xff, 0xff}, {0, 0, 0, 0, 0, 0, 1, 0}, {1, 2, 3}, {0x80, 0, 0, 0, 0, 0, 0, 0, 9}} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := codec.ParseCount(b)
		if (err == nil) != (len(b) == 4) {
			t.Fatalf("ParseCount(%v): %v", b, err)
		}
		if err == nil && !bytes.Equal(codec.CountBytes(c), b) {
			t.Fatalf("ParseCount(%v) = %d, which writes %v", b, c, codec.CountBytes(c))
		}
		l, err := codec.ParseLong(b)
		if (err == nil) != (len(b) == 0 || len(b) == 8) {
			t.Fatalf("ParseLong(%v): %v", b, err)
		}
		switch {
		case err == nil && len(b) == 0 && l != 0:
			t.Fatalf("ParseLong(empty) = %d, want 0", l)
		case err == nil && len(b) == 8 && !bytes.Equal(codec.LongBytes(l), b):
			t.Fatalf("ParseLong(%v) = %d, which writes %v", b, l, codec.LongBytes(l))
		}
		if err != nil && !errors.Is(err, ErrBadCounter) {
			t.Fatalf("ParseLong(%v): %v, want ErrBadCounter", b, err)
		}
	})
}
