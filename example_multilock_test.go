package baton_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleMultiLock() {
	ctx := context.Background()
	store := memory.New()
	s, _ := store.Open(ctx)
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

func ExampleMultiLock_TryLock() {
	ctx := context.Background()
	store := memory.New()
	s, _ := store.Open(ctx)
	defer s.Close(ctx)
	other, _ := store.Open(ctx)
	defer other.Close(ctx)

	bob := baton.NewMutex(other, "/accounts/bob")
	if _, err := bob.Lock(ctx); err != nil { // someone else holds one part
		panic(err)
	}
	m := baton.NewMultiLock(baton.NewMutex(s, "/accounts/alice"), baton.NewMutex(s, "/accounts/bob"))
	_, err := m.TryLock(ctx) // never waits; gives back what it took
	fmt.Println("one part taken:", errors.Is(err, baton.ErrLocked))
	_, err = baton.NewMutex(other, "/accounts/alice").TryLock(ctx)
	fmt.Println("alice free again:", err == nil)
	// Output:
	// one part taken: true
	// alice free again: true
}
