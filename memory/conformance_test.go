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
		Name: "memory",
		Open: func(t testing.TB, ttl time.Duration) *baton.Session {
			if ttl == 0 {
				ttl = time.Second
			}
			s, err := st.Open(context.Background(), ttl)
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
