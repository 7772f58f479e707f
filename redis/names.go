package redis

// KeyOf is the Redis key of a lock name, as NewMutex and NewRedlock use
// it: the name as written (baton.CleanName's rule), the key redsync and
// other clients given the same string use. "jobs/x" and "/jobs/x" are two
// locks. (baton before this rule dropped a leading "/": its lock "/jobs/x"
// was the key "jobs/x".) An invalid name is returned unchanged too;
// baton.CleanName says why it is invalid, and Lock and TryLock fail with
// that error, before any I/O. The lock's other keys are KEY:token (the
// fencing counter) and KEY:queue (the line).
func KeyOf(name string) string { return name }
