package baton_test

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleMultiLock() {
	ctx := context.Background()
	store := memory.New()
	s, _ := store.Open(ctx, 10*time.Second)
	defer s.Close(ctx)

	// Given in any order, taken in one global order: two multi-locks over
	// overlapping sets never deadlock.
	m := baton.NewMultiLock(
		baton.NewMutex(s, "/accounts/bob"),
		baton.NewMutex(s, "/accounts/alice"),
	)
	lease, err := m.Lock(ctx) // all or nothing
	if err != nil {
		panic(err)
	}
	fmt.Println("holding", lease.Key(), "tokens", lease.Tokens())
	if err := m.Unlock(ctx); err != nil { // in reverse order
		panic(err)
	}
	fmt.Println("released:", lease.Err())
	// Output:
	// holding /accounts/alice /accounts/bob tokens [1 2]
	// released: baton: not held
}
