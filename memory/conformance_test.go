package memory_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/memory"
)

func harness(st *memory.Store) batontest.Harness {
	var n atomic.Int64
	return batontest.Harness{
		Name:     "memory",
		Parallel: true,
		Open: func(t testing.TB, ttl time.Duration) *baton.Session {
			if ttl == 0 {
				ttl = time.Second
			}
			s, err := st.Open(context.Background(), memory.WithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close(context.Background()) })
			return s
		},
		Path:            func(testing.TB) string { return fmt.Sprintf("/baton/test-%d", n.Add(1)) },
		Expire:          func(_ testing.TB, s *baton.Session) { st.Expire(s.ID()) },
		Partition:       func(_ testing.TB, s *baton.Session) func() { return st.Partition(s.ID()) },
		DropCreateReply: func(_ testing.TB, s *baton.Session) { st.DropCreateReply(s.ID()) },
		PendingWatches:  func(testing.TB) int { return st.PendingWatches() },
	}
}

func TestConformance(t *testing.T) {
	batontest.Run(t, harness(memory.New()))
}

func TestConn(t *testing.T) {
	batontest.RunConn(t, harness(memory.New()))
}

// A barrier and a counter may be named by one element, bare ("deploy") or
// with its "/": a key at the top of the store, as on etcd. The two
// spellings are two nodes (baton.CleanName).
func TestTopLevelNames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := memory.New().Open(ctx, memory.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	for _, name := range []string{"deploy", "/deploy"} {
		b := baton.NewBarrier(s, name)
		if err := b.Set(ctx); err != nil {
			t.Fatalf("Set %q: %v", name, err)
		}
		if _, _, err := s.Conn().Get(ctx, name); err != nil {
			t.Fatalf("Get %q once set: %v", name, err)
		}
		if err := b.Remove(ctx); err != nil {
			t.Fatalf("Remove %q: %v", name, err)
		}
	}
	if err := baton.NewBarrier(s, "deploy").Set(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Conn().Get(ctx, "/deploy"); err == nil {
		t.Fatal(`"/deploy" is there after setting "deploy": one node for two names`)
	}
	if _, n, err := baton.NewAtomicLong(s, "hits").Add(ctx, 2); err != nil || n != 2 {
		t.Fatalf("AtomicLong hits: %d, %v", n, err)
	}
	if n, err := baton.NewAtomicLong(s, "/hits").Get(ctx); err != nil || n != 0 {
		t.Fatalf("AtomicLong /hits: %d, %v; want 0 (another counter)", n, err)
	}
}

func TestLocker(t *testing.T) {
	h := harness(memory.New())
	batontest.RunLocker(t, batontest.MutexLockers(h, false))
	t.Run("Reentrant", func(t *testing.T) { batontest.RunLocker(t, batontest.MutexLockers(h, true, baton.Reentrant())) })
}
