package baton_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleRWMutex() {
	ctx := context.Background()
	store := memory.New()
	a, _ := store.Open(ctx)
	b, _ := store.Open(ctx)
	defer a.Close(ctx)
	defer b.Close(ctx)

	// Two readers share the lock.
	ra, rb := baton.NewRWMutex(a, "/config"), baton.NewRWMutex(b, "/config")
	if _, err := ra.RLock(ctx); err != nil {
		panic(err)
	}
	if _, err := rb.RLock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("two readers inside")

	// A writer needs them both gone.
	w := baton.NewRWMutex(b, "/config")
	_, err := w.TryLock(ctx)
	fmt.Println("writer:", errors.Is(err, baton.ErrLocked))

	_ = ra.RUnlock(ctx)
	_ = rb.RUnlock(ctx)
	if _, err := w.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("writer inside alone")
	_ = w.Unlock(ctx)
	// Output:
	// two readers inside
	// writer: true
	// writer inside alone
}
