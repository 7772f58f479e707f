package memory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/memory"
)

// With every watch notification delivered late, hand-offs are slower but
// still exclusive, in queue order, with strictly increasing tokens.
func TestDelayedWatches(t *testing.T) {
	st := memory.New()
	st.DelayWatches(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const clients = 5
	holder, err := st.Open(ctx, memory.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	first := baton.NewMutex(holder, "/delayed")
	if _, err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var chk batontest.Checker
	order := make(chan int, clients)
	var wg sync.WaitGroup
	for i := range clients {
		s, err := st.Open(ctx, memory.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		m := baton.NewMutex(s, "/delayed")
		// Queue the clients one after another so their order is known.
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := m.Lock(ctx)
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			order <- i
			sp := chk.Enter(i, l.Token())
			batontest.Hold(l)
			chk.Leave(sp)
			if err := m.Unlock(ctx); err != nil {
				t.Errorf("client %d unlock: %v", i, err)
			}
		}()
		// Look, not watch: the test counts the store's watch notifications.
		await.Until(t, 10*time.Second, fmt.Sprintf("client %d in line", i), func() bool {
			kids, err := s.Conn().Children(ctx, "/delayed")
			return err == nil && len(kids) >= i+2
		})
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Fatalf("client %d acquired in place %d", got, want)
		}
		want++
	}
	if err := chk.Verify(true); err != nil {
		t.Fatal(err)
	}
	if st.WatchFires() != clients {
		t.Fatalf("%d notifications for %d hand-offs", st.WatchFires(), clients)
	}
}
