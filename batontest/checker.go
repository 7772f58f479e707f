package batontest

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/batonhq/baton"
)

// Hold stays inside a critical section for a random 0–2 ms, leaving early
// if l ends (nil: the full time). A section of zero width can hide an
// overlap: the next holder may enter only after this one has left.
func Hold(l *baton.Lease) {
	t := time.NewTimer(time.Duration(rand.IntN(2001)) * time.Microsecond)
	defer t.Stop()
	var done <-chan struct{}
	if l != nil {
		done = l.Done()
	}
	select {
	case <-t.C:
	case <-done:
	}
}

// Checker records critical sections and finds overlaps and fencing-token
// regressions. It is safe for concurrent use.
type Checker struct {
	mu       sync.Mutex
	inside   int
	overlaps int
	spans    []Span
}

// Span is one critical section.
type Span struct {
	Who        int
	Token      int64
	Start, End time.Time
}

// Enter records that who entered holding token; it returns the span to
// pass to Leave.
func (c *Checker) Enter(who int, token int64) Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inside++
	if c.inside > 1 {
		c.overlaps++
	}
	return Span{Who: who, Token: token, Start: time.Now()}
}

// Leave records the end of sp.
func (c *Checker) Leave(sp Span) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inside--
	sp.End = time.Now()
	c.spans = append(c.spans, sp)
}

// Spans returns the recorded spans in start order.
func (c *Checker) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]Span(nil), c.spans...)
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Verify returns an error describing the first violation: two sections
// inside at once, or a token that does not increase from one section to
// the next (when checkTokens is set).
func (c *Checker) Verify(checkTokens bool) error {
	c.mu.Lock()
	overlaps := c.overlaps
	c.mu.Unlock()
	if overlaps > 0 {
		return fmt.Errorf("%d overlapping critical sections", overlaps)
	}
	spans := c.Spans()
	for i := 1; i < len(spans); i++ {
		if spans[i].Start.Before(spans[i-1].End) {
			return fmt.Errorf("sections %d and %d overlap", i-1, i)
		}
		if checkTokens && spans[i].Token <= spans[i-1].Token {
			return fmt.Errorf("token went from %d to %d", spans[i-1].Token, spans[i].Token)
		}
	}
	return nil
}
