package handle

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A Turn lets one acquisition in until the Release of its lease: TryLock
// meanwhile is ErrLocked, Lock waits (here until its ctx ends), a failed
// acquisition gives the turn back, and a Release of another lease (a
// retried Unlock) does not. A Reentrant Turn takes no turns.
func TestTurnTakesTurns(t *testing.T) {
	ctx := context.Background()
	var gate Gate
	var turn Turn[*int]
	one, two := new(int), new(int)
	take := func(ctx context.Context, try bool, l *int, err error) (*int, error) {
		return turn.Take(ctx, try, "k", "handle", &gate, func() (*int, error) { return l, err })
	}
	if l, err := take(ctx, false, one, nil); err != nil || l != one {
		t.Fatalf("first Take: %v, %v", l, err)
	}
	if _, err := take(ctx, true, two, nil); !errors.Is(err, ErrLocked) || err.Error() != "baton: already held by another: k is held by this handle" {
		t.Fatalf("try while held: %v, want ErrLocked naming k", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond) // the width of a wait that must not end
	defer cancel()
	if _, err := take(wctx, false, two, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Take while held: %v, want to wait until ctx ends", err)
	}
	turn.Release(two) // not the turn's lease
	if _, err := take(ctx, true, two, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("try after releasing another lease: %v, want ErrLocked", err)
	}
	turn.Release(one)
	failed := errors.New("store said no")
	if _, err := take(ctx, true, nil, failed); !errors.Is(err, failed) {
		t.Fatalf("failing acquisition: %v", err)
	}
	if l, err := take(ctx, true, two, nil); err != nil || l != two {
		t.Fatalf("Take after a Release and a failed acquisition: %v, %v", l, err)
	}
	turn.Release(two)

	reentrant := Turn[*int]{Reentrant: true}
	for range 2 {
		if _, err := reentrant.Take(ctx, true, "k", "handle", &gate, func() (*int, error) { return one, nil }); err != nil {
			t.Fatalf("re-entrant Take: %v", err)
		}
	}
}
