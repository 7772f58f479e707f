package redis

import (
	"strings"

	"github.com/batonhq/baton"
)

// MaxKeyLen is the longest lock key, in bytes: baton.MaxNameLen less the
// leading "/" a key goes without.
const MaxKeyLen = baton.MaxNameLen - 1

// CheckKey reports why key cannot name a lock, as an error wrapping
// baton.ErrInvalidName, or nil. The rules are baton.CleanName's, the same
// on every store: among them, no empty, "." or ".." element, no control
// character, nothing above U+FFFF, and no suffix of the keys a lock uses
// besides its own (K:token, K:queue, K:waiting, K:release). Lock and
// TryLock check it first.
func CheckKey(key string) error {
	_, err := baton.CleanName(key)
	return err
}

// KeyOf is the Redis key of a lock name, as NewMutex and NewRedlock use
// it: the name in canonical form without its leading "/" (so "jobs/x" and
// "/jobs/x" are one lock, keyed "jobs/x"), or name unchanged if it is
// invalid (CheckKey says why).
func KeyOf(name string) string {
	clean, err := baton.CleanName(name)
	if err != nil {
		return name
	}
	return strings.TrimPrefix(clean, "/")
}
