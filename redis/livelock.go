package redis

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/handle"
)

// renewFunc extends a hold once. It returns the new end of validity, or an
// error wrapping baton.ErrLost when the hold is certainly gone; any other
// error is retried until validity runs out.
type renewFunc func(ctx context.Context) (time.Time, error)

// liveLock is one live acquisition: its random value, its lease, and the
// timers renewing it every ttl/3 and ending it when its validity runs
// out unconfirmed. No goroutine runs between renewals, so a short hold
// costs no goroutine start and stop.
type liveLock struct {
	value string
	lease *baton.Lease
	end   func(error)

	key   string
	every time.Duration
	renew renewFunc

	mu       sync.Mutex
	stopped  bool // released, or lost: the timers do nothing more
	deadline time.Time
	expire   *time.Timer        // ends the lease at deadline
	next     *time.Timer        // the next renewal
	cancel   context.CancelFunc // the renewal in flight, if any
	inflight sync.WaitGroup

	renewed atomic.Pointer[func(time.Duration)] // telemetry: slack at each confirmed renewal
}

// newLiveLock starts renewing an acquisition valid until deadline (measured on
// the monotonic clock from when the acquiring command was sent).
func newLiveLock(key string, token int64, value string, ttl time.Duration, deadline time.Time, renew renewFunc) *liveLock {
	hl, end := handle.NewLease(key, token)
	h := &liveLock{value: value, lease: (*baton.Lease)(hl), end: end, key: key, every: ttl / 3, renew: renew, deadline: deadline}
	handle.SetDeadline(hl, h.expiryTime, handle.DefaultGrace(ttl))
	h.mu.Lock()
	h.expire = time.AfterFunc(time.Until(deadline), h.expired)
	h.next = time.AfterFunc(h.every, h.renewOnce)
	h.mu.Unlock()
	return h
}

// expired ends the lease if its validity ran out unconfirmed.
func (h *liveLock) expired() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	if d := time.Until(h.deadline); d > 0 {
		h.expire.Reset(d) // a renewal moved the deadline meanwhile
		return
	}
	h.lose(fmt.Errorf("%w: %s: %w", baton.ErrLost, h.key, handle.ErrRenewFailed))
}

// lose ends the lease as lost. Called with h.mu held.
func (h *liveLock) lose(err error) {
	h.stopped = true
	h.expire.Stop()
	h.next.Stop()
	if h.cancel != nil {
		h.cancel() // the validity ran out: a late answer means nothing
	}
	h.end(err)
}

// renewOnce extends the hold once. It runs on the timer's goroutine, so
// that the validity running out ends the lease at that moment, however
// long a blackholed request takes to give up.
func (h *liveLock) renewOnce() {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), h.deadline)
	h.cancel = cancel
	h.inflight.Add(1)
	h.mu.Unlock()
	defer h.inflight.Done()

	nd, err := h.renew(ctx)
	cancel()

	h.mu.Lock()
	defer h.mu.Unlock()
	h.cancel = nil
	if h.stopped {
		return // released meanwhile: a failed extend means nothing now
	}
	switch {
	case errors.Is(err, baton.ErrLost):
		h.lose(err)
	case err == nil && nd.After(h.deadline):
		if f := h.renewed.Load(); f != nil {
			(*f)(time.Until(h.deadline))
		}
		h.deadline = nd
		h.next.Reset(h.every)
	default:
		h.next.Reset(max(h.every/8, 5*time.Millisecond))
	}
}

// stopRenewal tells the renewal to stop and not to end the lease. An
// extend already in flight may still land; that is harmless, since the
// release that follows deletes the key or no longer matches it.
func (h *liveLock) stopRenewal() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	h.stopped = true
	h.expire.Stop()
	h.next.Stop()
	if h.cancel != nil {
		h.cancel()
	}
}

// wait waits for a renewal in flight to return.
func (h *liveLock) wait() { h.inflight.Wait() }

// randomValue is a lock value unique to one acquisition attempt: a random
// UUID in 32 hex digits (the scripts tell baton's values by that form).
func randomValue() string {
	u := uuid.New()
	return hex.EncodeToString(u[:])
}

// newValue is a lock value for one acquisition attempt: the random part,
// then, with an identity, "." and the identity (stamped with ttl and the
// time) in base64url: no '|', ' ' or '+', which the line's entries, the
// hand-off messages and the release mark use.
func newValue(ident *baton.Identity, ttl time.Duration) string {
	v := randomValue()
	if ident != nil {
		id := *ident
		id.TTL, id.Created = ttl, time.Now()
		v += "." + base64.RawURLEncoding.EncodeToString(id.Bytes())
	}
	return v
}

// ParseValue returns the identity a baton lock value carries (a holder's
// value in K, with or without the release mark "+", or the value in a
// waiter's entry), and whether it carries one (WithIdentity).
func ParseValue(v string) (baton.Identity, bool) {
	v = strings.TrimSuffix(v, "+")
	_, enc, ok := strings.Cut(v, ".")
	if !ok {
		return baton.Identity{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return baton.Identity{}, false
	}
	return baton.ParseIdentity(b)
}

// expiryTime is the hold's loss deadline; the zero Time once the lease
// has ended.
func (h *liveLock) expiryTime() time.Time {
	if h.lease.Err() != nil {
		return time.Time{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deadline
}
