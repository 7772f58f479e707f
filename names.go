package baton

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest recipe name, in bytes, in canonical form.
const MaxNameLen = 4096

// reservedSuffixes end the names of the keys a Redis lock K uses besides
// K itself (K:token, K:queue, K:waiting, K:release): a name ending in one
// would share keys with another lock there, so no store takes it.
var reservedSuffixes = []string{":token", ":queue", ":waiting", ":release"}

// CleanName returns the canonical form of a recipe name, or an error
// wrapping ErrInvalidName that quotes the name (%q). The rule is the same
// on every store, so a name one store takes, every store takes, and
// names the same thing on each:
//
//   - A name is one or more elements separated by "/"; a leading "/" is
//     optional: "jobs/nightly" and "/jobs/nightly" are one name, whose
//     canonical form is "/jobs/nightly" (the ZooKeeper path, the etcd key
//     prefix; a Redis key is the name without its leading "/").
//   - No element is empty ("a//b", a trailing "/", "" and "/" are
//     refused: an empty shell variable in "/jobs/$ENV/x" must not name
//     another lock), "." or "..".
//   - It is UTF-8 of at most MaxNameLen bytes, without the characters
//     ZooKeeper refuses: control characters (C0, DEL, C1), surrogates and
//     private use (U+D800–U+F8FF), U+FFF0–U+FFFF, and anything above
//     U+FFFF (emoji, for instance).
//   - It does not end in ":token", ":queue", ":waiting" or ":release",
//     the keys a Redis lock uses besides its own.
//
// Every recipe constructor cleans its name: a recipe with a bad name
// fails its first call with this error, before any I/O.
func CleanName(name string) (string, error) {
	if !utf8.ValidString(name) {
		return "", fmt.Errorf("%w %s: not UTF-8", ErrInvalidName, quoteName(name))
	}
	clean := name
	if !strings.HasPrefix(clean, "/") {
		clean = "/" + clean
	}
	if len(clean) > MaxNameLen {
		return "", fmt.Errorf("%w %s: longer than %d bytes", ErrInvalidName, quoteName(name), MaxNameLen)
	}
	if clean == "/" {
		return "", fmt.Errorf("%w %q: empty", ErrInvalidName, name)
	}
	for _, elem := range strings.Split(clean[1:], "/") {
		switch elem {
		case "":
			return "", fmt.Errorf("%w %s: an empty element (a doubled or trailing /)", ErrInvalidName, quoteName(name))
		case ".", "..":
			return "", fmt.Errorf("%w %s: a %q element", ErrInvalidName, quoteName(name), elem)
		}
	}
	for _, r := range clean {
		if refusedRune(r) {
			return "", fmt.Errorf("%w %s: %U is a character ZooKeeper refuses, so no store takes it", ErrInvalidName, quoteName(name), r)
		}
	}
	for _, s := range reservedSuffixes {
		if base, ok := strings.CutSuffix(clean, s); ok {
			return "", fmt.Errorf("%w %s: ends in %q, a key Redis lock %q uses", ErrInvalidName, quoteName(name), s, strings.TrimPrefix(base, "/"))
		}
	}
	return clean, nil
}

// refusedRune reports whether ZooKeeper's PathUtils refuses r in a path
// (it judges UTF-16 code units: every character above U+FFFF is a
// surrogate pair).
func refusedRune(r rune) bool {
	return r <= 0x1f || r >= 0x7f && r <= 0x9f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0
}

// quoteName quotes a name for an error message as Go would (%q), in
// ASCII (%+q) if it has a character the rule refuses, and shortened if
// long.
func quoteName(name string) string {
	verb := "%q"
	for _, r := range name {
		if refusedRune(r) {
			verb = "%+q"
			break
		}
	}
	if len(name) <= 80 {
		return fmt.Sprintf(verb, name)
	}
	return fmt.Sprintf(verb+"… (%d bytes)", name[:60], len(name))
}

// cleanOrKeep is CleanName for a recipe constructor: the canonical name
// and nil, or name unchanged and the error its calls return.
func cleanOrKeep(name string) (string, error) {
	clean, err := CleanName(name)
	if err != nil {
		return name, err
	}
	return clean, nil
}
