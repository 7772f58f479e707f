package etcd

import (
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// FuzzParseName: parsing never panics, and every name this package makes
// parses back to its kind as a sequential node.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"694d7a0f1c4b3e05", "latch-694d7a0f1c4b3e05_3", "qn-00ff", "ready", "", "-", "_", "read-_1"} {
		f.Add(s, int64(0x694d7a0f1c4b3e05), uint8(2))
	}
	kinds := []string{backend.KindLock, backend.KindLatch, backend.KindRead, backend.KindWrite, backend.KindLease, backend.KindQueue}
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

// FuzzCheckName: a name checkDir accepts is UTF-8, within maxKeyLen, and
// has no control character and no "." or ".." element; a rejected one
// says so in one line wrapping baton.ErrInvalidName.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"/locks/a", "a/../b", "./x", "a/..", "x\x00", "x\u0085y", "\xff", "/", "", "a//b", "ü/ß"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		// Every name baton.CleanName takes, etcd takes, in canonical form,
		// with a child under it: one rule for every store.
		if clean, err := baton.CleanName(name); err == nil {
			if err := checkDir(clean); err != nil {
				t.Fatalf("CleanName(%q) = %q, which checkDir refuses: %v", name, clean, err)
			}
			if CheckName(name) != nil {
				t.Fatalf("CheckName(%q) refuses what CleanName takes", name)
			}
		} else if CheckName(name) == nil {
			t.Fatalf("CheckName(%q) takes what CleanName refuses", name)
		}
		err := checkDir(name)
		if err != nil {
			if !errors.Is(err, baton.ErrInvalidName) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("checkDir(%q): %q is not one ErrInvalidName line", name, err)
			}
			return
		}
		if !utf8.ValidString(name) || len(name) > maxKeyLen || name == "" {
			t.Fatalf("checkDir accepted %q", name)
		}
		for _, seg := range strings.Split(name, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("checkDir accepted %q with a %q element", name, seg)
			}
		}
		for _, r := range name {
			if unicode.IsControl(r) {
				t.Fatalf("checkDir accepted %q with control character %U", name, r)
			}
		}
	})
}

// How names parse back: etcd's own concurrency keys (etcdctl lock and
// elect) are locks, queue items queue nodes, anything else a literal.
func TestParseNameKinds(t *testing.T) {
	for name, kind := range map[string]string{
		"694d7a0f1c4b3e05":   backend.KindLock, // etcd concurrency key (etcdctl lock/elect)
		"694d7a0f1c4b3e05_2": backend.KindLock,
		"qn-00ff":            backend.KindQueue,
		"cafe":               "cafe", // too short for a lease id: a literal
		"lock-694d7a0f":      "lock-694d7a0f",
		"read-xyz":           "read-xyz",
	} {
		if got, _ := parseName(name); got != kind {
			t.Errorf("parseName(%q) = %q, want %q", name, got, kind)
		}
	}
}

// TestCreatedOf: a queue item's name made by reserve carries its creation
// time (to the millisecond) and still parses as a queue item; names
// without a version-7 id (an older baton's random id, a lease id, a
// literal name) carry none.
func TestCreatedOf(t *testing.T) {
	c := &conn{id: "694d7a0f1c4b3e05", reserved: keySet{m: map[string]bool{}}}
	before := time.Now().Truncate(time.Millisecond)
	key, err := c.reserve("/q", backend.KindQueue, 0)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	name := key[len("/q/"):]
	if kind, seq := parseName(name); kind != backend.KindQueue || !seq {
		t.Fatalf("parseName(%q) = %q, %v; want a queue item", name, kind, seq)
	}
	if got := createdOf(name); got.Before(before) || got.After(after) {
		t.Errorf("createdOf(%q) = %v, want in [%v, %v]", name, got, before, after)
	}
	v4 := uuid.New()
	for _, n := range []string{"qn-" + hex.EncodeToString(v4[:]), "694d7a0f1c4b3e05", "latch-694d7a0f1c4b3e05_3", "ready", "qn-", "qn-zz"} {
		if got := createdOf(n); !got.IsZero() {
			t.Errorf("createdOf(%q) = %v, want none", n, got)
		}
	}
}

func FuzzItemName(f *testing.F) {
	for _, s := range []string{"pq-5-0123456789abcdef0123456789abcdef", "dq-10-1700000000000-0123456789abcdef0123456789abcdef", "pq--1-x", "dq-1-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		kind, ok := parseItemName(name)
		if !ok {
			return
		}
		if !backend.IsItemKind(kind) {
			t.Fatalf("parseItemName(%q) = %q, no item kind", name, kind)
		}
		back := ""
		if p, ok := backend.ParsePriorityKind(kind); ok {
			back = "pq-" + strconv.FormatInt(int64(p), 10) + "-" + name[len(name)-32:] // an older baton's
		} else {
			back = itemName(kind, name[len(name)-32:])
		}
		if back != name {
			t.Fatalf("%q → %q → %q", name, kind, back)
		}
		if k, seq := parseName(name); k != kind || !seq {
			t.Fatalf("parseName(%q) = %q %v", name, k, seq)
		}
	})
}
