package baton_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/batonhq/baton"
)

// The one rule, by example: what is accepted and its canonical form, and
// what is refused.
func TestCleanName(t *testing.T) {
	for in, want := range map[string]string{
		"nightly-report":                        "/nightly-report",
		"/nightly-report":                       "/nightly-report",
		"jobs/nightly":                          "/jobs/nightly",
		"/jobs/nightly":                         "/jobs/nightly",
		"interop:TestX/sub:1":                   "/interop:TestX/sub:1",
		"ü/ß":                                   "/ü/ß",
		"a b":                                   "/a b",
		"...":                                   "/...",
		"a:tokens":                              "/a:tokens",
		"_c_x-lock-0000000001":                  "/_c_x-lock-0000000001",
		strings.Repeat("k", baton.MaxNameLen-1): "/" + strings.Repeat("k", baton.MaxNameLen-1),
	} {
		got, err := baton.CleanName(in)
		if err != nil || got != want {
			t.Errorf("CleanName(%.20q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", "/", "//", "/a//b", "a//b", "/a/", "a/", "//a",
		".", "..", "/a/../b", "/a/./b", "./a", "a/..",
		"a\x00b", "a\nb", "a\x7f", "a\u0085", "\xff", "a\xc3",
		"😀", "/locks/😀", "\ue000", "\ufff0", "\ud7ff\uffff",
		"x:token", "/a/b:queue", "x:waiting", "x:release",
		strings.Repeat("k", baton.MaxNameLen),
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
}

// FuzzCleanName: a refused name gets one ErrInvalidName line; an accepted
// one is canonical ("/" and non-empty elements, none "." or ".."), within
// MaxNameLen, with no character ZooKeeper refuses; cleaning is idempotent
// and the leading "/" optional.
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
		if clean != name && clean != "/"+name {
			t.Fatalf("CleanName(%q) = %q: more than a leading /", name, clean)
		}
		if len(clean) > baton.MaxNameLen || !utf8.ValidString(clean) || !strings.HasPrefix(clean, "/") {
			t.Fatalf("CleanName(%q) = %q", name, clean)
		}
		for _, e := range strings.Split(clean[1:], "/") {
			if e == "" || e == "." || e == ".." {
				t.Fatalf("CleanName(%q) = %q has element %q", name, clean, e)
			}
		}
		for _, r := range clean {
			if r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0 {
				t.Fatalf("CleanName(%q) = %q has %U", name, clean, r)
			}
		}
		for _, again := range []string{clean, clean[1:]} {
			if c, err := baton.CleanName(again); c != clean || err != nil {
				t.Fatalf("CleanName(%q) = %q, %v; want %q", again, c, err, clean)
			}
		}
	})
}
