package backend

import (
	"testing"
	"time"
)

func FuzzQueueKinds(f *testing.F) {
	for _, s := range []string{"pq:0", "pq:-5", "pq:2147483648", "pq:05", "dq:-1:17", "dq:5:0", "dq:-2:1", "dq:1:-1", "dq::", "lock"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, kind string) {
		if p, ok := ParsePriorityKind(kind); ok && PriorityKind(p) != kind {
			t.Fatalf("%q → %d → %q", kind, p, PriorityKind(p))
		}
		if d, due, ok := ParseDelayKind(kind); ok {
			if back := delayKind(d, due); back != kind {
				t.Fatalf("%q → %d, %d → %q", kind, d, due, back)
			}
		}
	})
}

func TestDelayKind(t *testing.T) {
	due := time.UnixMilli(1700000000123)
	k := DelayKind(1500*time.Millisecond, due)
	if d, u, ok := ParseDelayKind(k); !ok || d != 1500 || u != due.UnixMilli() || k != "dq:1500:1700000000123" {
		t.Fatalf("%q → %d %d %v", k, d, u, ok)
	}
}
