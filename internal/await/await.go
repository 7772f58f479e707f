// Package await is how baton's tests wait for something to happen: on the
// event itself where the store gives one (Children watches a directory),
// else by looking again at growing intervals until a deadline (Until,
// Within). Tests never sleep to put events in order.
package await

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/backend"
)

// maxInterval is the longest pause between two looks at a condition: short
// enough for a test's pace, long enough not to flood a server that is asked
// (Prometheus, a ZooKeeper four-letter word).
const maxInterval = 100 * time.Millisecond

// Within looks at cond until it holds, and reports whether it did before
// d passed. It looks at once, then after pauses that double from 1 ms up
// to 100 ms, and once more at the deadline.
func Within(d time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return WithinCtx(ctx, cond)
}

// WithinCtx is Within until ctx ends.
func WithinCtx(ctx context.Context, cond func() bool) bool {
	pause := time.Millisecond
	t := time.NewTimer(pause)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return cond()
		case <-t.C:
		}
		pause = min(2*pause, maxInterval)
		t.Reset(pause)
	}
	return true
}

// Until is Within that fails tb, naming what it waited for, when d passes
// first.
func Until(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Within(d, cond) {
		tb.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// Children waits, on the store's own watch of dir (Conn.WaitChildren), until
// ok accepts dir's children, and returns them. It fails tb if d passes
// first or the store errs.
func Children(tb testing.TB, ctx context.Context, c backend.Conn, dir string, d time.Duration, what string, ok func([]backend.Node) bool) []backend.Node {
	tb.Helper()
	kids, err := ChildrenCtx(ctx, c, dir, d, ok)
	if err != nil {
		tb.Fatalf("waiting for %s: %v", what, err)
	}
	return kids
}

// ChildrenCtx is Children returning the error: ctx's, the deadline's or
// the store's.
func ChildrenCtx(ctx context.Context, c backend.Conn, dir string, d time.Duration, ok func([]backend.Node) bool) ([]backend.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		kids, err := c.Children(ctx, dir)
		if err != nil {
			return kids, fmt.Errorf("children of %s: %w", dir, err)
		}
		if ok(kids) {
			return kids, nil
		}
		if err := c.WaitChildren(ctx, dir, kids); err != nil {
			return kids, fmt.Errorf("%d children of %s, still waiting: %w", len(kids), dir, err)
		}
	}
}

// AtLeast accepts n or more children.
func AtLeast(n int) func([]backend.Node) bool {
	return func(kids []backend.Node) bool { return len(kids) >= n }
}
