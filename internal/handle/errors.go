package handle

import "errors"

// The sentinels a lease ends with and an acquisition fails with, defined
// here so that every world reaches them: the root package, which
// re-exports them, the backends' own locks (redis) and the telemetry that
// tells from them how a hold ended. Their documentation is the root
// package's.
var (
	ErrLocked         = errors.New("baton: already held by another")
	ErrNotHeld        = errors.New("baton: not held")
	ErrLost           = errors.New("baton: lock lost")
	ErrRevoked        = errors.New("baton: node removed by another")
	ErrSessionExpired = errors.New("baton: session expired")
	ErrSessionLost    = errors.New("baton: session lost")
	ErrClosed         = errors.New("baton: session closed")

	// ErrRenewFailed is the cause of a loss (wrapped with ErrLost) when no
	// renewal of a lock's validity was confirmed before it ran out: a
	// Redis lock's. Sessions end with ErrSessionLost instead.
	ErrRenewFailed = errors.New("renewal not confirmed before the lock's validity ran out")
)
