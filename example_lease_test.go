package baton_test

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

// Check Valid right before each side effect: it reads the clock, so a
// process that was paused past its TTL (a GC pause, SIGSTOP, a stalled VM)
// learns on resuming that it may no longer hold the lock, even before Done
// closes. Jeopardy warns, while the lease still holds, that contact with
// the store has lapsed: time to checkpoint.
func ExampleLease_Valid() {
	ctx := context.Background()
	store := memory.New()
	s, _ := store.Open(ctx, memory.WithTTL(3*time.Second)) // Jeopardy 600 ms before the deadline
	defer s.Close(ctx)

	lease, err := baton.NewMutex(s, "/locks/report").Lock(ctx)
	if err != nil {
		panic(err)
	}
	write := func(part int) bool {
		if !lease.Valid() {
			return false // or pass lease.Token() and let the resource refuse
		}
		fmt.Println("write part", part, "with token", lease.Token())
		return true
	}
	write(1)

	heal := store.Partition(s.ID()) // cut off from the store
	defer heal()
	<-lease.Jeopardy()
	fmt.Println("in jeopardy; still valid:", lease.Valid(), "deadline within a second:", time.Until(lease.Deadline()) <= time.Second)
	write(2) // a last part while the lease holds

	<-lease.Done()
	fmt.Println("wrote part 3:", write(3), "-", lease.Err())
	// Output:
	// write part 1 with token 1
	// in jeopardy; still valid: true deadline within a second: true
	// write part 2 with token 1
	// wrote part 3: false - baton: lock lost: baton: session lost
}
