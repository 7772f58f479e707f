package zk

import (
	"math"
	"strings"
	"testing"

	"github.com/batonhq/baton/backend"
)

func TestParseName(t *testing.T) {
	const uuid = "3f2b8c1e-9a4d-4e2b-8f1a-0c9d8e7f6a5b"
	const hex = "f1e2d3c4b5a697887766554433221100"
	tests := []struct {
		name string
		kind string
		seq  int32
		seqd bool
	}{
		{"_c_" + uuid + "-lock-0000000007", backend.KindLock, 7, true},              // Curator InterProcessMutex
		{"_c_" + hex + "-lock-0000000012", backend.KindLock, 12, true},              // go-zookeeper Lock
		{hex + "__lock__0000000003", backend.KindLock, 3, true},                     // kazoo Lock / WriteLock
		{hex + "__rlock__0000000004", backend.KindRead, 4, true},                    // kazoo ReadLock
		{"_c_" + uuid + "-__READ__0000000001", backend.KindRead, 1, true},           // Curator read lock
		{"_c_" + uuid + "-__WRIT__0000000002", backend.KindWrite, 2, true},          // Curator write lock
		{"_c_" + uuid + "-latch-0000000009", backend.KindLatch, 9, true},            // LeaderLatch
		{"_c_" + uuid + "-lease-0000000010", backend.KindLease, 10, true},           // Semaphore V2
		{"qn-0000000000", backend.KindQueue, 0, true},                               // DistributedQueue
		{"lock-2147483647", backend.KindLock, math.MaxInt32, true},                  // top
		{"_c_" + uuid + "-lock--2147483648", backend.KindLock, math.MinInt32, true}, // wrapped
		{"_c_" + uuid + "-lock--000000005", backend.KindLock, -5, true},
		{"_c_" + uuid + "-lock--1000000000", backend.KindLock, -1000000000, true},
		{"qn--000000001", backend.KindQueue, -1, true},
		{"member-0000000004", "", 4, true}, // a sequence but no marker we know
		// Plain nodes: their kind is their name.
		{"locks", "locks", 0, false},
		{"leases", "leases", 0, false},
		{"ready", "ready", 0, false},
		{"0000000001x", "0000000001x", 0, false},
		// Malformed contenders: ignored, never plain nodes.
		{"_c_" + uuid + "-lock-00001", "", 0, false},
		{"_c_" + uuid + "-lock-", "", 0, false},
		{"lock-+000000001", "", 0, false},
		{"lock-2147483648", "", math.MinInt32, true}, // "lock" + "-2147483648": no marker
		{"lock--0000000001", "", 1, true},            // "lock--" + "0000000001": no marker
		{"lock-00000000001", "", 1, true},            // "lock-0" + "0000000001": no marker
		{"lock-000000000a", "", 0, false},            // not digits
		{"qn-", "", 0, false},                        // no sequence
		{hex + "__lock__12", "", 0, false},           // short sequence
		{"_c_whatever", "", 0, false},                // protected prefix, no sequence
		{"", "", 0, false},                           // empty name
		{"lock-٠٠٠٠٠٠٠٠٠١", "", 0, false},            // non-ASCII digits
	}
	for _, tt := range tests {
		p := parseName(tt.name)
		if p.kind != tt.kind || p.sequential != tt.seqd || (tt.seqd && p.seq != tt.seq) {
			t.Errorf("parseName(%q) = %+v, want kind %q seq %d sequential %v", tt.name, p, tt.kind, tt.seq, tt.seqd)
		}
	}
}

func TestFormatSeq(t *testing.T) {
	for v, want := range map[int32]string{
		0: "0000000000", 42: "0000000042", math.MaxInt32: "2147483647",
		-1: "-000000001", -999999999: "-999999999", -1000000000: "-1000000000",
		math.MinInt32: "-2147483648",
	} {
		if got := formatSeq(v); got != want {
			t.Errorf("formatSeq(%d) = %q, want %q", v, got, want)
		}
	}
}

func names(nodes []backend.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

func TestSortChildren(t *testing.T) {
	kids := sortChildren("/l", []string{
		"ready",
		"_c_b-lock-0000000003",
		"x__lock__0000000001",
		"junk",
		"_c_a-lock-0000000002",
		"_c_c-lock-0000000010",
	})
	want := "x__lock__0000000001 _c_a-lock-0000000002 _c_b-lock-0000000003 _c_c-lock-0000000010 junk ready"
	if got := strings.Join(names(kids), " "); got != want {
		t.Fatalf("order = %s\nwant    %s", got, want)
	}
	if kids[0].Path != "/l/x__lock__0000000001" || kids[0].Kind != backend.KindLock || kids[0].Seq != 1 {
		t.Fatalf("first = %+v", kids[0])
	}
	if kids[4].Seq <= kids[3].Seq {
		t.Fatalf("plain node Seq %d not after sequential %d", kids[4].Seq, kids[3].Seq)
	}
}

func TestSortChildrenWrap(t *testing.T) {
	kids := sortChildren("/l", []string{
		"lock--2147483647",
		"lock-2147483646",
		"lock--2147483648",
		"lock-2147483647",
	})
	want := "lock-2147483646 lock-2147483647 lock--2147483648 lock--2147483647"
	if got := strings.Join(names(kids), " "); got != want {
		t.Fatalf("order = %s\nwant    %s", got, want)
	}
	if kids[2].Seq != 1<<31 {
		t.Fatalf("wrapped seq = %d, want %d", kids[2].Seq, int64(1)<<31)
	}
	// Negatives alone, or a small span across zero, are not a wrap.
	kids = sortChildren("/l", []string{"lock-0000000002", "lock--000000003", "lock--000000001"})
	want = "lock--000000003 lock--000000001 lock-0000000002"
	if got := strings.Join(names(kids), " "); got != want {
		t.Fatalf("order = %s\nwant    %s", got, want)
	}
}

func FuzzParseName(f *testing.F) {
	for _, s := range []string{
		"_c_3f2b8c1e-9a4d-4e2b-8f1a-0c9d8e7f6a5b-lock-0000000007",
		"f1e2d3c4b5a697887766554433221100__lock__0000000003",
		"abc__rlock__0000000004", "qn-0000000000", "lock--2147483648",
		"_c_x-__READ__-000000001", "ready", "", "lock-", "-0000000001",
	} {
		f.Add(s, "lock-0000000001")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		p := parseName(a)
		if p.sequential {
			head, seq, ok := splitSeq(a)
			if !ok || seq != p.seq || head+formatSeq(seq) != a {
				t.Fatalf("%q: sequence does not round-trip: %q %d", a, head, seq)
			}
		} else if p.kind != "" && p.kind != a {
			t.Fatalf("%q: plain node has kind %q", a, p.kind)
		}
		kids := sortChildren("/d", []string{a, b})
		if len(kids) != 2 {
			t.Fatalf("lost a child: %v", kids)
		}
		again := sortChildren("/d", []string{b, a})
		for i := range kids {
			if kids[i].Name != again[i].Name || kids[i].Seq != again[i].Seq {
				t.Fatalf("order depends on input order: %v vs %v", names(kids), names(again))
			}
		}
		if kids[0].Seq > kids[1].Seq {
			t.Fatalf("not in Seq order: %+v", kids)
		}
	})
}
