package telemetry

import (
	"sync/atomic"
	"time"
)

// Renewals is where a connection reports its confirmed renewals: the
// OnRenew half of baton.Renewer, for a Conn to embed. Its zero value
// reports to nobody.
type Renewals struct {
	f atomic.Pointer[func(slack time.Duration)]
}

// OnRenew makes f be called at each confirmed renewal, with the time that
// was left before the session's loss deadline. f must not block.
func (r *Renewals) OnRenew(f func(slack time.Duration)) { r.f.Store(&f) }

// Reporting says whether anyone is told of renewals.
func (r *Renewals) Reporting() bool { return r.f.Load() != nil }

// Renewed reports a confirmed renewal with slack left, if anyone listens.
func (r *Renewals) Renewed(slack time.Duration) {
	if f := r.f.Load(); f != nil {
		(*f)(slack)
	}
}
