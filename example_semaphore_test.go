package baton_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleSemaphore() {
	ctx := context.Background()
	store := memory.New()
	s, _ := store.Open(ctx)
	defer s.Close(ctx)

	// At most two report workers at once.
	sem := baton.NewSemaphore(s, "/semaphores/reports", 2)
	first, err := sem.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	if _, err := sem.Acquire(ctx); err != nil {
		panic(err)
	}
	_, err = sem.TryAcquire(ctx)
	fmt.Println("third:", errors.Is(err, baton.ErrLocked))

	if err := sem.Release(ctx, first); err != nil {
		panic(err)
	}
	if _, err := sem.TryAcquire(ctx); err != nil {
		panic(err)
	}
	fmt.Println("third after a release: ok")
	// Output:
	// third: true
	// third after a release: ok
}
