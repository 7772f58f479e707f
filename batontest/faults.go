package batontest

import (
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/batonhq/baton"
)

// Drops is how many lost create replies the CreateReplyLostMany test
// injects: BATON_FAULT_DROPS, default 25 (the reliability run uses 1,000).
func Drops() int {
	if n, err := strconv.Atoi(os.Getenv("BATON_FAULT_DROPS")); err == nil && n > 0 {
		return n
	}
	return 25
}

// Many lost create replies while another client contends for the same
// lock: every cycle holds the lock exclusively, no orphan node is left and
// no waiter is stuck.
func testMutexCreateReplyLostMany(t *testing.T, h Harness) {
	if h.DropCreateReply == nil {
		t.Fatalf("%s: harness has no DropCreateReply", h.Name)
	}
	ctx := testCtx(t)
	name := h.Path(t)
	n := Drops()
	ss := sessions(t, h, 2)
	var chk Checker
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func(i int, s *baton.Session) {
			defer wg.Done()
			m := baton.NewMutex(s, name)
			for range n {
				if i == 0 {
					h.DropCreateReply(t, s)
				}
				l, err := m.Lock(ctx)
				if err != nil {
					t.Errorf("client %d: Lock: %v", i, err)
					return
				}
				sp := chk.Enter(i, l.Token())
				Hold(l)
				chk.Leave(sp)
				if err := m.Unlock(ctx); err != nil {
					t.Errorf("client %d: Unlock: %v", i, err)
					return
				}
			}
		}(i, s)
	}
	wg.Wait()
	if err := chk.Verify(true); err != nil {
		t.Fatal(err)
	}
	if got := len(chk.Spans()); got != 2*n {
		t.Fatalf("%d critical sections, want %d", got, 2*n)
	}
	if left := lockNodes(t, h, name); left != 0 {
		t.Fatalf("%d orphan lock nodes after %d lost create replies", left, n)
	}
	t.Logf("%s: %d lost create replies, %d exclusive sections, 0 orphans", h.Name, n, len(chk.Spans()))
}
