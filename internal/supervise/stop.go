package supervise

import "time"

// Stop is how CMD is told to stop while a hold is in danger or over:
// SIGTERM Grace before the loss deadline when no contact with the store
// has been confirmed (jeopardy), or when the hold ends; SIGKILL KillAfter
// after the SIGTERM, and at the loss deadline at the latest.
type Stop struct {
	Grace     time.Duration // 0: no notice before the deadline
	KillAfter time.Duration
}

// args are the watchdog's arguments that carry s (read by Watchdog).
func (s Stop) args() []string {
	return []string{"--grace", s.Grace.String(), "--kill-after", s.KillAfter.String()}
}
