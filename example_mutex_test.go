package baton_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleSession() {
	ctx := context.Background()
	store := memory.New() // zk.Open or etcd.Open for a real store
	s, err := store.Open(ctx)
	if err != nil {
		panic(err)
	}
	defer s.Close(ctx)

	select {
	case <-s.Done():
		fmt.Println("session lost:", s.Err())
	default:
		fmt.Println("session live, ttl", s.TTL())
	}
	// Output: session live, ttl 10s
}

func ExampleMutex_Lock() {
	ctx := context.Background()
	store := memory.New()
	s, _ := store.Open(ctx)
	defer s.Close(ctx)

	m := baton.NewMutex(s, "/locks/nightly-report")
	lease, err := m.Lock(ctx)
	if err != nil {
		panic(err)
	}
	// Stop working if the lock is lost, and hand the fencing token to the
	// resource being protected.
	work, stop := lease.Context(ctx)
	defer stop()
	fmt.Println("holding", lease.Key(), "token", lease.Token(), "live", work.Err() == nil)

	if err := m.Unlock(ctx); err != nil {
		panic(err)
	}
	<-work.Done()
	fmt.Println("released:", lease.Err())
	// Output:
	// holding /locks/nightly-report token 1 live true
	// released: baton: not held
}

func ExampleMutex_TryLock() {
	ctx := context.Background()
	store := memory.New()
	a, _ := store.Open(ctx)
	b, _ := store.Open(ctx)
	defer a.Close(ctx)
	defer b.Close(ctx)

	if _, err := baton.NewMutex(a, "/locks/job").Lock(ctx); err != nil {
		panic(err)
	}
	_, err := baton.NewMutex(b, "/locks/job").TryLock(ctx)
	fmt.Println(err)
	// Output: baton: already held by another: /locks/job
}
