package bench

import (
	"strconv"
	"sync"
)

// relayLine is the in-process line of one lock name on a relay floor
// (EtcdRelay, RedisRelay): whether it is held, and its waiters in order,
// each with the turn that a releaser hands it. W is a waiter.
type relayLine[W comparable] struct {
	mu   sync.Mutex
	held bool
	line []relayTurn[W]
	seq  int64
}

// relayTurn is a waiter and the value that tells it the lock is its own.
type relayTurn[W comparable] struct {
	w    W
	turn string
}

// join takes the lock for w if nobody holds it (free), else puts w at the
// back of the line and returns the turn it is to wait for.
func (r *relayLine[W]) join(w W) (turn string, free bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.held {
		r.held = true
		return "", true
	}
	r.seq++
	turn = strconv.FormatInt(r.seq, 10)
	r.line = append(r.line, relayTurn[W]{w, turn})
	return turn, false
}

// leave takes w out of the line after a failed wait. It reports false if
// w was no longer in it: it was handed the lock, and must pass it on.
func (r *relayLine[W]) leave(w W) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, t := range r.line {
		if t.w == w {
			r.line = append(r.line[:i:i], r.line[i+1:]...)
			return true
		}
	}
	return false
}

// next takes the first waiter out of the line, to be handed the lock; with
// nobody in line (ok false) the lock is free.
func (r *relayLine[W]) next() (next relayTurn[W], ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.line) == 0 {
		r.held = false
		return next, false
	}
	next = r.line[0]
	r.line = r.line[1:]
	return next, true
}
