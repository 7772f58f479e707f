package baton_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
)

// The one rule, by example: what is accepted (kept as written), and what
// is refused.
func TestCleanName(t *testing.T) {
	for _, in := range []string{
		"nightly-report", "/nightly-report", "jobs/nightly", "/jobs/nightly",
		"interop:TestX/sub:1", "ü/ß", "a b", "...", "a:tokens", "_c_x-lock-0000000001",
		strings.Repeat("k", baton.MaxNameLen), "/" + strings.Repeat("k", baton.MaxNameLen-1),
	} {
		got, err := baton.CleanName(in)
		if err != nil || got != in {
			t.Errorf("CleanName(%.20q) = %q, %v; want it as written", in, got, err)
		}
	}
	for _, in := range []string{
		"", "/", "//", "/a//b", "a//b", "/a/", "a/", "//a",
		".", "..", "/a/../b", "/a/./b", "./a", "a/..",
		"a\x00b", "a\nb", "a\x7f", "a\u0085", "\xff", "a\xc3",
		"😀", "/locks/😀", "\ue000", "\ufff0", "\ud7ff\uffff",
		"x:token", "/a/b:queue", "x:waiting", "x:release",
		strings.Repeat("k", baton.MaxNameLen+1), "/" + strings.Repeat("k", baton.MaxNameLen),
	} {
		got, err := baton.CleanName(in)
		if !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("CleanName(%.20q) = %q, %v; want ErrInvalidName", in, got, err)
			continue
		}
		// The message quotes the name as Go would (%q), never raw.
		if msg := err.Error(); strings.ContainsAny(msg, "\n\x00\x7f") || !utf8.ValidString(msg) || strings.Contains(msg, "😀") {
			t.Errorf("CleanName(%.20q): message %q shows the name raw", in, msg)
		}
	}
	// The Redis lock a reserved suffix belongs to is named as written.
	if _, err := baton.CleanName("/jobs/x:token"); err == nil || !strings.Contains(err.Error(), `a key Redis lock "/jobs/x" uses`) {
		t.Errorf("CleanName(/jobs/x:token): %v", err)
	}
}

func TestAbsolutePath(t *testing.T) {
	for in, want := range map[string]string{"x": "/x", "/x": "/x", "a/b": "/a/b", "/a/b": "/a/b"} {
		if got := backend.AbsolutePath(in); got != want {
			t.Errorf("AbsolutePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzCleanName: a refused name gets one ErrInvalidName line; an accepted
// one is returned as written, and has "/"-separated non-empty elements,
// none "." or "..", within MaxNameLen, with no character ZooKeeper
// refuses; its other spelling (with or without the leading "/") is
// accepted too unless that makes it too long.
func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"a", "/a", "/a/b", "a//b", "/a/../b", "/", "", "😀", "\xff", "x:token", "ü/ß", "a/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		clean, err := baton.CleanName(name)
		if err != nil {
			if !errors.Is(err, baton.ErrInvalidName) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("CleanName(%q): %q is not one ErrInvalidName line", name, err)
			}
			return
		}
		if clean != name {
			t.Fatalf("CleanName(%q) = %q: not as written", name, clean)
		}
		if len(clean) > baton.MaxNameLen || !utf8.ValidString(clean) {
			t.Fatalf("CleanName(%q) = %q", name, clean)
		}
		for _, e := range strings.Split(strings.TrimPrefix(clean, "/"), "/") {
			if e == "" || e == "." || e == ".." {
				t.Fatalf("CleanName(%q) = %q has element %q", name, clean, e)
			}
		}
		for _, r := range clean {
			if r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0 {
				t.Fatalf("CleanName(%q) = %q has %U", name, clean, r)
			}
		}
		other := strings.TrimPrefix(clean, "/")
		if other == clean {
			other = "/" + clean
		}
		if c, err := baton.CleanName(other); (err != nil) != (len(other) > baton.MaxNameLen) || err == nil && c != other {
			t.Fatalf("CleanName(%q) = %q, %v; the other spelling of %q", other, c, err, clean)
		}
		if abs := backend.AbsolutePath(clean); abs != "/"+strings.TrimPrefix(clean, "/") {
			t.Fatalf("AbsolutePath(%q) = %q", clean, abs)
		}
	})
}
