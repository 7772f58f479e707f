package zk

import (
	"bytes"
	"errors"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// Curator's own names: DistributedPriorityQueue.priorityToString and
// DistributedDelayQueue.epochToString, as Curator 5.4 writes them.
func TestCuratorItemNames(t *testing.T) {
	for _, tc := range []struct{ kind, head string }{
		{backend.PriorityKind(0), "queue-100000000"},
		{backend.PriorityKind(10), "queue-10000000A"},
		{backend.PriorityKind(-1), "queue-0FFFFFFFF"},
		{backend.PriorityKind(-2147483648), "queue-080000000"},
		{backend.PriorityKind(2147483647), "queue-17FFFFFFF"},
		{"dq:-1:1700000000000", "queue-|18BCFE56800|"},
		{"dq:-1:255", "queue-|000000FF|"},
		{"dq:1500:1700000000000", "queue-D5DC|18BCFE56800|"},
		{"dq:0:1", "queue-D0|00000001|"},
	} {
		head, ok := curatorItemName(tc.kind)
		if !ok || head != tc.head {
			t.Errorf("name of %s: %q, want %q", tc.kind, head, tc.head)
		}
		if k := parseCuratorItem(tc.head); k != tc.kind {
			t.Errorf("kind of %q: %q, want %s", tc.head, k, tc.kind)
		}
		if p := parseName(tc.head + "0000000042"); p.kind != tc.kind || p.seq != 42 || !p.sequential {
			t.Errorf("parseName(%q…): %+v", tc.head, p)
		}
	}
	for _, bad := range []string{"queue-", "queue-1FFFFFFFF", "queue-00000000A", "queue-1abcdef12", "queue-||",
		"queue-|FF|", "queue-X|00000001|", "queue-D|00000001|", "queue-D01|00000001|", "queue-|000000001|", "queue-|0000000G|"} {
		if k := parseCuratorItem(bad); k != "" {
			t.Errorf("parseCuratorItem(%q) = %q, want none", bad, k)
		}
	}
}

func TestItemSerializer(t *testing.T) {
	// ItemSerializer.serialize of the one item "hi".
	curator := []byte{0, 1, 0, 1, 1, 0, 0, 0, 2, 'h', 'i', 2}
	if got := encodeItem([]byte("hi")); !bytes.Equal(got, curator) {
		t.Fatalf("encodeItem: % x, want % x", got, curator)
	}
	if got, err := decodeItem(curator); err != nil || string(got) != "hi" {
		t.Fatalf("decodeItem: %q %v", got, err)
	}
	multi := []byte{0, 1, 0, 1, 1, 0, 0, 0, 1, 'a', 1, 0, 0, 0, 1, 'b', 2}
	if _, err := decodeItem(multi); !errors.Is(err, baton.ErrIncompatible) {
		t.Fatalf("decodeItem of a putMulti item: %v, want ErrIncompatible", err)
	}
}

func FuzzCuratorItemName(f *testing.F) {
	for _, s := range []string{"queue-100000000", "queue-0FFFFFFFF", "queue-|18BCFE56800|", "queue-D5DC|18BCFE56800|", "queue-", "queue-||", "queue-D|1|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, head string) {
		k := parseCuratorItem(head)
		if k == "" {
			return
		}
		if !backend.IsItemKind(k) {
			t.Fatalf("parseCuratorItem(%q) = %q, no item kind", head, k)
		}
		if back, ok := curatorItemName(k); !ok || back != head {
			t.Fatalf("%q → %q → %q", head, k, back)
		}
	})
}

func FuzzDecodeItem(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1, 1, 0, 0, 0, 2, 'h', 'i', 2})
	f.Add([]byte{0, 1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 2})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		data, err := decodeItem(b)
		if err != nil {
			if !errors.Is(err, baton.ErrIncompatible) {
				t.Fatalf("decodeItem: %v is no ErrIncompatible", err)
			}
			return
		}
		if got, err := decodeItem(encodeItem(data)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("round trip of %q: %q %v", data, got, err)
		}
	})
}
