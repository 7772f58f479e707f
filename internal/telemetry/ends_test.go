package telemetry

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/batonhq/baton/internal/handle"
)

// One mapping for both worlds: the errors of the recipes on a session and
// those of the Redis locks, wrapped as they are returned.
func TestOutcomeAndEnd(t *testing.T) {
	wrap := func(errs ...error) error {
		err := errors.New("detail")
		for _, e := range errs {
			err = fmt.Errorf("%w: %w", e, err)
		}
		return err
	}
	for _, c := range []struct {
		err     error
		outcome string
	}{
		{nil, OutcomeAcquired},
		{wrap(handle.ErrLocked), OutcomeTimeout},
		{context.DeadlineExceeded, OutcomeTimeout},
		{context.Canceled, OutcomeCanceled},
		{wrap(handle.ErrLost), OutcomeError},
	} {
		if got := Outcome(c.err); got != c.outcome {
			t.Errorf("Outcome(%v) = %q, want %q", c.err, got, c.outcome)
		}
	}
	for _, c := range []struct {
		err         error
		end, reason string
	}{
		{nil, EndReleased, ""},
		{handle.ErrNotHeld, EndReleased, ""},
		{wrap(handle.ErrClosed), EndReleased, ""},
		{wrap(handle.ErrLost, handle.ErrSessionExpired), EndLost, ReasonSessionExpired},
		{wrap(handle.ErrLost, handle.ErrSessionLost), EndLost, ReasonSessionLost},
		{wrap(handle.ErrRenewFailed, handle.ErrLost), EndLost, ReasonRenewFailed},
		{wrap(handle.ErrLost, handle.ErrRevoked), EndRevoked, ReasonNodeDeleted},
		{wrap(handle.ErrLost), EndRevoked, ReasonNodeDeleted}, // a Redis key no longer ours
	} {
		if end, reason := End(c.err); end != c.end || reason != c.reason {
			t.Errorf("End(%v) = %q, %q; want %q, %q", c.err, end, reason, c.end, c.reason)
		}
	}
}
