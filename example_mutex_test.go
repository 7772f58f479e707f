package baton_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

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

// A Mutex value is one lock, as a sync.Mutex is: goroutines that share it
// take turns.
func ExampleMutex_shared() {
	ctx := context.Background()
	s, _ := memory.New().Open(ctx)
	defer s.Close(ctx)

	m := baton.NewMutex(s, "/locks/ledger")
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := m.Lock(ctx); err != nil { // waits while another goroutine holds m
				panic(err)
			}
			n := inside.Add(1)
			for old := most.Load(); n > old && !most.CompareAndSwap(old, n); old = most.Load() {
			}
			inside.Add(-1)
			if err := m.Unlock(ctx); err != nil {
				panic(err)
			}
		})
	}
	wg.Wait()
	fmt.Println("at most", most.Load(), "inside at once")
	// Output: at most 1 inside at once
}

// With Reentrant, a Mutex counts the nested Locks of one holder instead
// of waiting for itself.
func ExampleReentrant() {
	ctx := context.Background()
	s, _ := memory.New().Open(ctx)
	defer s.Close(ctx)

	m := baton.NewMutex(s, "/locks/ledger", baton.Reentrant())
	outer, _ := m.Lock(ctx)
	inner, _ := m.Lock(ctx) // a nested call of the same holder: no wait
	fmt.Println("same lease:", inner == outer)
	_ = m.Unlock(ctx)
	fmt.Println("held after one Unlock:", m.Held())
	_ = m.Unlock(ctx)
	fmt.Println("held after two:", m.Held())
	// Output:
	// same lease: true
	// held after one Unlock: true
	// held after two: false
}
