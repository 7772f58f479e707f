package handle

import "sync"

// Ender is a lease as Reentrant keeps it: one that says whether it has
// ended.
type Ender interface {
	comparable
	Err() error
}

// Reentrant is what one handle holds, counted by level: the backend's
// record H of the acquisition (our node, our Redis value) and its lease.
// Its methods are safe to call concurrently; callers serialise the
// acquire and release paths with a Gate. The zero value holds nothing.
type Reentrant[H any, L Ender] struct {
	mu    sync.Mutex
	count int
	held  H
	lease L
}

// Again raises the count and returns the lease if the handle holds a live
// lease, else nil.
func (r *Reentrant[H, L]) Again() L {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count > 0 && r.lease.Err() == nil {
		r.count++
		return r.lease
	}
	var none L
	return none
}

// Take records a new acquisition at level one and returns its lease.
func (r *Reentrant[H, L]) Take(h H, l L) L {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held, r.lease, r.count = h, l, 1
	return l
}

// Stale returns the record of a hold whose lease has ended (lost, or
// released while the release itself failed) and that is still recorded
// because it was never successfully given back.
func (r *Reentrant[H, L]) Stale() (H, L, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count > 0 && r.lease.Err() != nil {
		return r.held, r.lease, true
	}
	var zero H
	var none L
	return zero, none, false
}

// Current returns the record and lease of the hold, whether or not the
// lease is live; ok is false when the handle holds nothing.
func (r *Reentrant[H, L]) Current() (h H, l L, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held, r.lease, r.count > 0
}

// Live reports whether the handle holds a live lease.
func (r *Reentrant[H, L]) Live() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count > 0 && r.lease.Err() == nil
}

// Release gives back one level. Without a hold it returns ErrNotHeld;
// while levels remain it only lowers the count. The last level calls free
// with the record; free gives the hold back on the store and says whether
// it is over (given back, or gone with the session). Only then is the
// handle cleared: a hold whose free failed stays recorded at level one, so
// that Release can be called again.
func (r *Reentrant[H, L]) Release(free func(H) (over bool, err error)) error {
	r.mu.Lock()
	switch {
	case r.count == 0:
		r.mu.Unlock()
		return ErrNotHeld
	case r.count > 1:
		r.count--
		r.mu.Unlock()
		return nil
	}
	h, l := r.held, r.lease
	r.mu.Unlock()
	over, err := free(h)
	if over {
		r.Clear(l)
	}
	return err
}

// Clear forgets the hold whose lease is l; a newer hold taken meanwhile
// (by another goroutine) stays.
func (r *Reentrant[H, L]) Clear(l L) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lease != l {
		return
	}
	var zero H
	var none L
	r.held, r.lease, r.count = zero, none, 0
}
