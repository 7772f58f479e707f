package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/handle"
)

// renewFunc extends a hold once. It returns the new end of validity, or an
// error wrapping baton.ErrLost when the hold is certainly gone; any other
// error is retried until validity runs out.
type renewFunc func(ctx context.Context) (time.Time, error)

// hold is one live acquisition: its random value, its lease, and the
// goroutine renewing it every ttl/3.
type hold struct {
	value string
	lease *baton.Lease
	end   func(error)
	stop  chan struct{}
	done  chan struct{}

	mu     sync.Mutex
	expiry time.Time // the loss deadline keep works to
}

// newHold starts renewing an acquisition valid until deadline (measured on
// the monotonic clock from when the acquiring command was sent).
func newHold(key string, token int64, value string, ttl time.Duration, deadline time.Time, renew renewFunc) *hold {
	l, end := handle.NewLease(key, token)
	h := &hold{value: value, lease: l, end: end, stop: make(chan struct{}), done: make(chan struct{}), expiry: deadline}
	go h.keep(key, ttl, deadline, renew)
	return h
}

func (h *hold) keep(key string, ttl time.Duration, deadline time.Time, renew renewFunc) {
	defer close(h.done)
	every := ttl / 3
	retry := max(every/8, 5*time.Millisecond)
	expire := time.NewTimer(time.Until(deadline))
	next := time.NewTimer(every)
	defer expire.Stop()
	defer next.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-expire.C:
			h.end(fmt.Errorf("%w: %s: renewal not confirmed before the lock's validity ran out", baton.ErrLost, key))
			return
		case <-next.C:
		}
		// The renewal runs on its own so that the validity running out
		// ends the lease at that moment, however long a blackholed
		// request takes to give up.
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		type renewed struct {
			nd  time.Time
			err error
		}
		res := make(chan renewed, 1)
		go func() {
			nd, err := renew(ctx)
			res <- renewed{nd, err}
		}()
		var nd time.Time
		var err error
		select {
		case <-h.stop:
			cancel()
			return // released meanwhile: a failed extend means nothing now
		case <-expire.C:
			cancel()
			h.end(fmt.Errorf("%w: %s: renewal not confirmed before the lock's validity ran out", baton.ErrLost, key))
			return
		case r := <-res:
			cancel()
			nd, err = r.nd, r.err
		}
		select {
		case <-h.stop:
			return
		default:
		}
		switch {
		case errors.Is(err, baton.ErrLost):
			h.end(err)
			return
		case err == nil && nd.After(deadline):
			deadline = nd
			h.setExpiry(deadline)
			expire.Reset(time.Until(deadline))
			next.Reset(every)
		default:
			next.Reset(retry)
		}
	}
}

func (h *hold) setExpiry(t time.Time) {
	h.mu.Lock()
	h.expiry = t
	h.mu.Unlock()
}

// expiryTime is the hold's loss deadline; the zero Time once the lease
// has ended.
func (h *hold) expiryTime() time.Time {
	if h.lease.Err() != nil {
		return time.Time{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.expiry
}

// stopRenewal tells the renewal to stop and not to end the lease. An
// extend already in flight may still land; that is harmless, since the
// release that follows deletes the key or no longer matches it.
func (h *hold) stopRenewal() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
}

// wait waits for the renewal goroutine to exit.
func (h *hold) wait() { <-h.done }

// randomValue is a lock value unique to one acquisition attempt: a random
// UUID.
func randomValue() string { return uuid.NewString() }

// expiryOf is the loss deadline of the hold a handle has, or the zero Time.
func expiryOf(levels *handle.Reentrant[*hold]) time.Time {
	h, _, ok := levels.Current()
	if !ok {
		return time.Time{}
	}
	return h.expiryTime()
}
