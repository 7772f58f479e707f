package baton

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/internal/rediskeys"
)

// MaxNameLen is the longest recipe name, in bytes, as written (a leading
// "/" counts).
const MaxNameLen = 4096

// CleanName checks a recipe name and returns it as written, or an error
// wrapping ErrInvalidName that quotes the name (%q). The rule is the same
// on every store, so a name one store takes, every store takes:
//
//   - A name is one or more elements separated by "/", with or without a
//     leading "/". No element is empty ("a//b", a trailing "/", "" and
//     "/" are refused: an empty shell variable in "/jobs/$ENV/x" must
//     not name another lock), "." or "..".
//   - It is UTF-8 of at most MaxNameLen bytes, without the characters
//     ZooKeeper refuses: control characters (C0, DEL, C1), surrogates and
//     private use (U+D800–U+F8FF), U+FFF0–U+FFFF, and anything above
//     U+FFFF (emoji, for instance).
//   - It does not end in ":token", ":queue", ":waiting" or ":release",
//     the keys a Redis lock uses besides its own.
//
// A name is kept as written, so that baton and each store's own tools
// given the same string contend on the same lock:
//
//   - etcd: the name is the key prefix, as in etcd's concurrency package,
//     `etcdctl lock NAME`, `etcdctl elect NAME` and the v3lock and
//     v3election services: a Mutex on "jobs/x" keys its contenders
//     "jobs/x/<lease id>", one on "/jobs/x" keys them "/jobs/x/<lease id>".
//     "jobs/x" and "/jobs/x" are two names there, as they are to etcd.
//   - Redis: the name is the lock's key, as redsync's; "/jobs/x" is the
//     key "/jobs/x".
//   - memory: as etcd, the name as written.
//   - ZooKeeper needs absolute paths: a name without a leading "/" names
//     the znode at "/" + name (AbsolutePath), as Curator, kazoo and
//     go-zookeeper, which take absolute paths only, would write it.
//     "jobs/x" and "/jobs/x" are one name there.
//
// baton before this rule put a "/" before every name on every store, so
// its etcd and Redis locks named "x" are at "/x": `baton status x` says
// when the other spelling is held or waited on.
//
// Every recipe constructor cleans its name: a recipe with a bad name
// fails its first call with this error, before any I/O.
func CleanName(name string) (string, error) {
	if !utf8.ValidString(name) {
		return "", fmt.Errorf("%w %s: not UTF-8", ErrInvalidName, quoteName(name))
	}
	if len(name) > MaxNameLen {
		return "", fmt.Errorf("%w %s: longer than %d bytes", ErrInvalidName, quoteName(name), MaxNameLen)
	}
	if name == "" || name == "/" {
		return "", fmt.Errorf("%w %q: empty", ErrInvalidName, name)
	}
	for _, elem := range strings.Split(strings.TrimPrefix(name, "/"), "/") {
		switch elem {
		case "":
			return "", fmt.Errorf("%w %s: an empty element (a doubled or trailing /)", ErrInvalidName, quoteName(name))
		case ".", "..":
			return "", fmt.Errorf("%w %s: a %q element", ErrInvalidName, quoteName(name), elem)
		}
	}
	for _, r := range name {
		if refusedRune(r) {
			return "", fmt.Errorf("%w %s: %U is a character ZooKeeper refuses, so no store takes it", ErrInvalidName, quoteName(name), r)
		}
	}
	// A name ending in a suffix of a Redis lock's other keys would share
	// keys with another lock there, so no store takes it.
	for _, s := range rediskeys.Reserved {
		if base, ok := strings.CutSuffix(name, s); ok {
			return "", fmt.Errorf("%w %s: ends in %q, a key Redis lock %q uses", ErrInvalidName, quoteName(name), s, base)
		}
	}
	return name, nil
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

// cleanOrKeep is CleanName for a recipe constructor: the name as s's
// store names it (AbsolutePath on a store of absolute paths) and nil, or
// name unchanged and the error its calls return. s may be nil (a recipe
// that opens its sessions later): the Conn then takes the name as
// written, which a store of absolute paths reads as AbsolutePath does.
func cleanOrKeep(s *Session, name string) (string, error) {
	clean, err := CleanName(name)
	if err != nil {
		return name, err
	}
	if s != nil {
		if a, ok := s.conn.(backend.AbsolutePaths); ok && a.AbsolutePaths() {
			return backend.AbsolutePath(clean), nil
		}
	}
	return clean, nil
}
