package baton_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExamplePermitSemaphore() {
	ctx := context.Background()
	store := memory.New()
	worker, _ := store.Open(ctx)
	defer worker.Close(ctx)
	admin, _ := store.Open(ctx)
	defer admin.Close(ctx)

	// Two permits; this one ends by itself after 50 ms unless extended.
	sem := baton.NewPermitSemaphore(worker, "/limits/exports", 2)
	p, _ := sem.Acquire(ctx, 50*time.Millisecond)

	// Any process can look the permit up by its id, extend or release it.
	other := baton.NewPermitSemaphore(admin, "/limits/exports", 2)
	info, _ := other.Permit(ctx, p.ID)
	fmt.Println("time to live:", info.TTL)
	_ = other.Extend(ctx, p.ID, 100*time.Millisecond)

	<-p.Lease.Done() // the holder is told when its permit ends
	fmt.Println("expired:", errors.Is(p.Lease.Err(), baton.ErrPermitExpired))
	// Output:
	// time to live: 50ms
	// expired: true
}
