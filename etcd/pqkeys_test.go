package etcd

import (
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// FuzzPQKey: reading a key as an item of etcd's priority queue layout
// never panics; what it takes is exactly what pqKey writes (five digits of
// priority, sixteen of seq), it reads back the priority and seq that made
// it, and a priority refused by checkPriority is never written.
func FuzzPQKey(f *testing.F) {
	for _, s := range []string{"00005/0000000000000001", "99999/9999999999999999", "00000/0000000000000000",
		"-0001/0000000000000001", "0005/0000000000000001", "00005/000000000000001", "00005/00000000000000001",
		"00005", "00005/", "/0000000000000001", "00005/0000000000000001/x", "0000a/0000000000000001", "pq-5-x", ""} {
		f.Add(s, int32(5), int64(1))
	}
	f.Fuzz(func(t *testing.T, rest string, p int32, seq int64) {
		const dir = "/q"
		if pr, sq, ok := parsePQRest(rest); ok {
			if checkPriority(pr) != nil || sq < 0 || sq > maxSeq {
				t.Fatalf("parsePQRest(%q) = %d, %d: out of range", rest, pr, sq)
			}
			if key := pqKey(dir, pr, sq); key != dir+"/"+rest {
				t.Fatalf("parsePQRest(%q) = %d, %d, which pqKey writes %q", rest, pr, sq, key)
			}
			name, kind, ok := pqChild(prefix(dir), dir+"/"+rest)
			if got, ok2 := backend.ParsePriorityKind(kind); !ok || !ok2 || got != pr || name != pqName(pr, sq) {
				t.Fatalf("pqChild of %q = %q %q %v", rest, name, kind, ok)
			}
			if _, _, ok := pqItem(prefix(dir), &mvccpb.KeyValue{Key: []byte(dir + "/" + rest), Lease: 7}); ok {
				t.Fatalf("a key on a lease, %q, read as an item", rest)
			}
		}
		if err := checkPriority(p); err != nil {
			if !errors.Is(err, baton.ErrInvalidPriority) || (p >= 0 && p <= 99999) {
				t.Fatalf("checkPriority(%d) = %v", p, err)
			}
			return
		}
		if seq < 0 || seq > maxSeq {
			return
		}
		key := pqKey(dir, p, seq)
		if key != pqPrefix(dir, p)+"/"+key[len(pqPrefix(dir, p))+1:] {
			t.Fatalf("pqKey %q is not under pqPrefix %q", key, pqPrefix(dir, p))
		}
		if got, ok := parseSeq(key); !ok || got != seq {
			t.Fatalf("parseSeq(%q) = %d %v, want %d", key, got, ok, seq)
		}
		if pr, sq, ok := parsePQRest(key[len(prefix(dir)):]); !ok || pr != p || sq != seq {
			t.Fatalf("%d, %d → %q → %d, %d, %v", p, seq, key, pr, sq, ok)
		}
	})
}

// Key order is delivery order: by priority, then seq, as etcd's Dequeue
// takes the first key.
func TestPQKeyOrder(t *testing.T) {
	keys := []string{pqKey("/q", 0, 9), pqKey("/q", 0, 10), pqKey("/q", 1, 0), pqKey("/q", 9, 0), pqKey("/q", 10, 0), pqKey("/q", 99999, 0)}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Fatalf("%q sorts before %q", keys[i], keys[i-1])
		}
	}
	if k := pqKey("/q", 5, 1); k != "/q/00005/0000000000000001" {
		t.Fatalf("pqKey = %q", k)
	}
}
