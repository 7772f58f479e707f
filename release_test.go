package baton_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/backend"
	"github.com/batonhq/baton/memory"
)

// errDeleteFails is the failure flakyDeletes injects.
var errDeleteFails = errors.New("delete failed (injected)")

// flakyDeletes is a Conn whose next Deletes fail, without reaching the
// store, while fail is above zero.
type flakyDeletes struct {
	backend.Conn
	fail atomic.Int32
}

func (c *flakyDeletes) Delete(ctx context.Context, n backend.Node) error {
	if c.fail.Add(-1) >= 0 {
		return errDeleteFails
	}
	return c.Conn.Delete(ctx, n)
}

// A release whose delete fails returns the error, and the node is deleted
// in the background all the same: a contender waiting in line gets the lock
// without the holder calling the release again (a caller that drops the
// error must not leave the lock taken for the session's life). Calling the
// release again still succeeds, after which another release is
// ErrNotHeld.
func TestFailedReleaseIsRetried(t *testing.T) {
	type handle struct {
		take    func(ctx context.Context) (*baton.Lease, error)
		release func(ctx context.Context) error
	}
	recipes := map[string]func(s *baton.Session, name string) handle{
		"Mutex": func(s *baton.Session, name string) handle {
			m := baton.NewMutex(s, name)
			return handle{m.Lock, m.Unlock}
		},
		"RWMutex": func(s *baton.Session, name string) handle {
			m := baton.NewRWMutex(s, name)
			return handle{m.Lock, m.Unlock}
		},
		"Semaphore": func(s *baton.Session, name string) handle {
			m := baton.NewSemaphore(s, name, 1)
			var l *baton.Lease
			return handle{
				func(ctx context.Context) (*baton.Lease, error) {
					var err error
					l, err = m.Acquire(ctx)
					return l, err
				},
				func(ctx context.Context) error { return m.Release(ctx, l) },
			}
		},
		"Election": func(s *baton.Session, name string) handle {
			e := baton.NewElection(s, name)
			return handle{
				func(ctx context.Context) (*baton.Lease, error) {
					if err := e.Campaign(ctx, nil); err != nil {
						return nil, err
					}
					return e.Lease(), nil
				},
				e.Resign,
			}
		},
	}
	for name, mk := range recipes {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st := memory.New()
			open := func() *baton.Session {
				s, err := st.Open(ctx, memory.WithTTL(10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close(context.Background()) })
				return s
			}
			a, b := open(), open()
			flaky := &flakyDeletes{Conn: a.Conn()}
			holder := mk(baton.NewSession(flaky, baton.Telemetry{}), "/retry")
			other := mk(b, "/retry")
			l, err := holder.take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The release's delete fails, and so do the first two
			// background tries.
			flaky.fail.Store(3)
			if err := holder.release(ctx); !errors.Is(err, errDeleteFails) {
				t.Fatalf("release with a failing delete: %v, want its error", err)
			}
			if l.Err() == nil {
				t.Fatal("lease still live after its release was called")
			}
			// Well within the holder's session TTL (10 s): only the
			// background delete can free the lock in time.
			wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
			defer wcancel()
			if _, err := other.take(wctx); err != nil {
				t.Fatalf("contender after the failed release: %v (the node was left behind)", err)
			}
			if err := holder.release(ctx); err != nil {
				t.Fatalf("retried release: %v", err)
			}
			if err := holder.release(ctx); !errors.Is(err, baton.ErrNotHeld) {
				t.Fatalf("third release: %v, want ErrNotHeld", err)
			}
		})
	}
}
