package telemetry

import (
	"context"
	"errors"

	"github.com/batonhq/baton/internal/handle"
)

// Outcome is the acquire outcome of an acquire call's error, for every
// lock of every store. A Try call refused with ErrLocked gave up without
// waiting: a timeout of zero.
func Outcome(err error) string {
	switch {
	case err == nil:
		return OutcomeAcquired
	case errors.Is(err, handle.ErrLocked), errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	default:
		return OutcomeError
	}
}

// End says how a lease that ended with err ended (an End constant), and
// why if it was lost or revoked (a Reason constant). A release, and a
// session closed by its owner, end a hold as released; a session that
// expired or was given up, and a lock whose validity ran out unrenewed
// (Redis), lose it; anything else (our node removed, our Redis key no
// longer ours, a renewal refused) revokes it.
func End(err error) (end, reason string) {
	switch {
	case err == nil, errors.Is(err, handle.ErrNotHeld), errors.Is(err, handle.ErrClosed):
		return EndReleased, ""
	case errors.Is(err, handle.ErrSessionExpired):
		return EndLost, ReasonSessionExpired
	case errors.Is(err, handle.ErrSessionLost):
		return EndLost, ReasonSessionLost
	case errors.Is(err, handle.ErrRenewFailed):
		return EndLost, ReasonRenewFailed
	default:
		return EndRevoked, ReasonNodeDeleted
	}
}
