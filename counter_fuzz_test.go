package baton

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzCounterBytes: the counter parsers accept exactly Curator's layouts
// (4 bytes for SharedCount; 0 or 8 for DistributedAtomicLong), round-trip
// what they accept, and reject everything else with ErrBadCounter.
func FuzzCounterBytes(f *testing.F) {
	for _, b := range [][]byte{nil, {0, 0, 0, 5}, {0xff, 0xff, 0xff, 0xff}, {0, 0, 0, 0, 0, 0, 1, 0}, {1, 2, 3}, {0x80, 0, 0, 0, 0, 0, 0, 0, 9}} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCount(b)
		if (err == nil) != (len(b) == 4) {
			t.Fatalf("ParseCount(%v): %v", b, err)
		}
		if err == nil && !bytes.Equal(CountBytes(c), b) {
			t.Fatalf("ParseCount(%v) = %d, which writes %v", b, c, CountBytes(c))
		}
		l, err := ParseLong(b)
		if (err == nil) != (len(b) == 0 || len(b) == 8) {
			t.Fatalf("ParseLong(%v): %v", b, err)
		}
		switch {
		case err == nil && len(b) == 0 && l != 0:
			t.Fatalf("ParseLong(empty) = %d, want 0", l)
		case err == nil && len(b) == 8 && !bytes.Equal(LongBytes(l), b):
			t.Fatalf("ParseLong(%v) = %d, which writes %v", b, l, LongBytes(l))
		}
		if err != nil && !errors.Is(err, ErrBadCounter) {
			t.Fatalf("ParseLong(%v): %v, want ErrBadCounter", b, err)
		}
	})
}
