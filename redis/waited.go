package redis

import "sync"

// maxWaited bounds the keys a Client remembers as contended; past it, it
// forgets them all (their next Lock tries a plain SET first again).
const maxWaited = 4096

// waited is the set of lock keys whose last acquisition on a Client had
// to wait. Lock on such a key joins the line in its first request (the
// acquire script); on any other it first tries a plain SET NX PX with the
// token's INCR, pipelined, which an uncontended lock needs no more than.
type waited struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func (w *waited) has(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.m[key]
	return ok
}

// set records whether the acquisition of key that just succeeded waited.
func (w *waited) set(key string, did bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !did {
		delete(w.m, key)
		return
	}
	if w.m == nil || len(w.m) >= maxWaited {
		w.m = map[string]struct{}{}
	}
	w.m[key] = struct{}{}
}
