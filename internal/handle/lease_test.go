package handle

import (
	"sync/atomic"
	"testing"
	"time"
)

// movable is a loss deadline that renewals move, as a backend's Expiry.
type movable struct{ at atomic.Int64 } // unix ns; 0: lost

func (m *movable) set(t time.Time) {
	if t.IsZero() {
		m.at.Store(0)
		return
	}
	m.at.Store(t.UnixNano())
}
func (m *movable) get() time.Time {
	n := m.at.Load()
	if n == 0 {
		return time.Time{}
	}
	// Through time.Now so that the reading is on the monotonic clock.
	return time.Now().Add(time.Until(time.Unix(0, n)))
}

// Valid answers from the clock: a lease whose deadline has passed is not
// valid although nothing has ended it yet (a process that resumes from a
// pause sees this before the backend's loss reaches Done).
func TestLeaseValidFromTheClock(t *testing.T) {
	var d movable
	d.set(time.Now().Add(time.Hour))
	l, end := NewLease("k", 1)
	SetDeadline(l, d.get, time.Second)
	if !l.Valid() {
		t.Fatal("a lease an hour from its deadline is not valid")
	}
	d.set(time.Now().Add(-time.Millisecond))
	if l.Valid() {
		t.Fatal("a lease past its deadline is valid")
	}
	select {
	case <-l.Done():
		t.Fatal("Done closed by the clock alone")
	default:
	}
	end(ErrNotHeld)
	if l.Valid() || !l.Deadline().IsZero() {
		t.Fatalf("ended lease: valid %v deadline %v", l.Valid(), l.Deadline())
	}

	plain, _ := NewLease("k", 2)
	if !plain.Valid() || !plain.Deadline().IsZero() {
		t.Fatalf("lease without a deadline: valid %v deadline %v, want valid and none", plain.Valid(), plain.Deadline())
	}
}

// Jeopardy closes once the deadline is within the grace, not before, and
// follows the renewals that move the deadline meanwhile; Done is then
// still open.
func TestLeaseJeopardy(t *testing.T) {
	const grace = 200 * time.Millisecond
	var d movable
	start := time.Now()
	d.set(start.Add(grace + 100*time.Millisecond))
	l, end := NewLease("k", 1)
	defer end(ErrNotHeld)
	SetDeadline(l, d.get, grace)
	j := l.Jeopardy()
	d.set(start.Add(grace + 400*time.Millisecond)) // a renewal
	select {
	case <-j:
	case <-time.After(10 * time.Second):
		t.Fatal("no Jeopardy as the deadline came within the grace")
	}
	if at := time.Since(start); at < 400*time.Millisecond {
		t.Fatalf("Jeopardy %v after the start, before the renewed deadline came within the grace (400ms)", at)
	}
	if lead := time.Until(l.Deadline()); lead > grace {
		t.Fatalf("Jeopardy %v before the deadline, before the grace of %v", lead, grace)
	}
	select {
	case <-l.Done():
		t.Fatal("Done closed with Jeopardy")
	default:
	}
}

// Jeopardy closes with Done at the latest, even for a lease without a
// deadline and one whose Jeopardy was never asked for before the end.
func TestLeaseJeopardyClosesWithDone(t *testing.T) {
	for _, timed := range []bool{false, true} {
		l, end := NewLease("k", 1)
		if timed {
			var d movable
			d.set(time.Now().Add(time.Hour))
			SetDeadline(l, d.get, time.Second)
		}
		end(ErrNotHeld)
		select {
		case <-l.Jeopardy():
		default:
			t.Fatalf("timed %v: Jeopardy open after the end", timed)
		}
	}
}

// A multi-lock's lease has its earliest part's deadline, and none once a
// part has lost its own.
func TestMultiLeaseDeadline(t *testing.T) {
	var a, b movable
	now := time.Now()
	a.set(now.Add(time.Hour))
	b.set(now.Add(time.Minute))
	la, _ := NewLease("a", 1)
	SetDeadline(la, a.get, time.Second)
	lb, _ := NewLease("b", 2)
	SetDeadline(lb, b.get, 2*time.Second)
	plain, _ := NewLease("c", 3)
	m, _ := NewMultiLease("a b c", 1, []*Lease{la, lb, plain})
	if got := time.Until(m.Deadline()); got > time.Minute || got < 50*time.Second {
		t.Fatalf("multi-lease deadline in %v, want the earliest part's (a minute)", got)
	}
	if m.grace != 2*time.Second {
		t.Fatalf("grace %v, want the longest part's", m.grace)
	}
	b.set(time.Time{})
	if !m.Deadline().IsZero() || m.Valid() {
		t.Fatalf("a part lost: multi-lease deadline %v valid %v, want none and invalid", m.Deadline(), m.Valid())
	}
}
