package redis

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/batonhq/baton"
)

// MaxKeyLen bounds lock names. Redis itself takes keys up to 512 MB; a
// lock name this long is a mistake.
const MaxKeyLen = 4096

// keySuffixes are the suffixes of a lock's other keys (see the package
// doc): a lock named with one would share keys with another lock.
var keySuffixes = []string{":token", ":queue", ":waiting", ":release"}

// CheckKey reports why key cannot name a lock, as an error wrapping
// baton.ErrInvalidName, or nil: it must be non-empty UTF-8 of at most
// MaxKeyLen bytes without control characters, and must not end in a
// suffix of the keys a lock uses besides its own (K:token, K:queue,
// K:waiting, K:release), which would make it share keys with lock K.
// Lock and TryLock check it first.
func CheckKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty lock name", baton.ErrInvalidName)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: lock name longer than %d bytes", baton.ErrInvalidName, MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: lock name %q is not UTF-8", baton.ErrInvalidName, key)
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: lock name %q has a control character", baton.ErrInvalidName, key)
		}
	}
	for _, s := range keySuffixes {
		if base, ok := strings.CutSuffix(key, s); ok {
			return fmt.Errorf("%w: lock name %q ends in %q: lock %q uses that key", baton.ErrInvalidName, key, s, base)
		}
	}
	return nil
}
