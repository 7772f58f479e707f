package redis

import (
	"github.com/batonhq/baton"
)

// MaxKeyLen is the longest lock key, in bytes: baton.MaxNameLen, as the
// key is the name as written.
const MaxKeyLen = baton.MaxNameLen

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
// it: the name as written (baton.CleanName's rule), the key redsync and
// other clients given the same string use. "jobs/x" and "/jobs/x" are two
// locks. (baton before this rule dropped a leading "/": its lock "/jobs/x"
// was the key "jobs/x".) An invalid name is returned unchanged too;
// CheckKey says why it is invalid.
func KeyOf(name string) string { return name }
