package handle

import (
	"context"
	"sync"
)

// Gate lets one call at a time through a lock handle (Lock, Unlock, …).
// The zero value is open.
type Gate struct {
	once sync.Once
	ch   chan struct{}
}

func (g *Gate) init() { g.once.Do(func() { g.ch = make(chan struct{}, 1) }) }

// Enter waits until the gate is free and takes it. A free gate is taken
// even when ctx is already done, so that a release called with a cancelled
// ctx still releases; ctx only bounds the wait for another call to leave.
func (g *Gate) Enter(ctx context.Context) error {
	g.init()
	select {
	case g.ch <- struct{}{}:
		return nil
	default:
	}
	select {
	case g.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Leave gives the gate back.
func (g *Gate) Leave() { <-g.ch }

// TryEnter takes the gate if it is free, and reports whether it did; it
// never waits.
func (g *Gate) TryEnter() bool {
	g.init()
	select {
	case g.ch <- struct{}{}:
		return true
	default:
		return false
	}
}
