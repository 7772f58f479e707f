package etcd

import (
	"strconv"
	"testing"

	"github.com/batonhq/baton"
)

// FuzzParseName: parsing never panics, and every name this package makes
// parses back to its kind as a sequential node.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"694d7a0f1c4b3e05", "latch-694d7a0f1c4b3e05_3", "qn-00ff", "ready", "", "-", "_", "read-_1"} {
		f.Add(s, int64(0x694d7a0f1c4b3e05), uint8(2))
	}
	kinds := []string{baton.KindLock, baton.KindLatch, baton.KindRead, baton.KindWrite, baton.KindLease, baton.KindQueue}
	f.Fuzz(func(t *testing.T, name string, lease int64, n uint8) {
		parseName(name)
		if lease <= 0 || lease < 1<<32 {
			return
		}
		kind := kinds[int(n)%len(kinds)]
		made := seqName(kind, strconv.FormatInt(lease, 16))
		if n%2 == 1 {
			made += "_" + strconv.Itoa(int(n))
		}
		if got, seq := parseName(made); got != kind || !seq {
			t.Fatalf("parseName(%q) = %q, %v; want %q, true", made, got, seq, kind)
		}
	})
}
