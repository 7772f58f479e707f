package baton_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleBarrier() {
	ctx := context.Background()
	store := memory.New()
	s, _ := store.Open(ctx)
	defer s.Close(ctx)

	b := baton.NewBarrier(s, "/barriers/deploy")
	if err := b.Set(ctx); err != nil {
		panic(err)
	}
	passed := make(chan struct{})
	go func() {
		_ = baton.NewBarrier(s, "/barriers/deploy").Wait(ctx)
		close(passed)
	}()
	fmt.Println("deploying")
	_ = b.Remove(ctx)
	<-passed
	fmt.Println("workers released")
	// Output:
	// deploying
	// workers released
}

func ExampleDoubleBarrier() {
	ctx := context.Background()
	store := memory.New()
	const workers = 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	entered, left := 0, 0
	for range workers {
		s, _ := store.Open(ctx)
		defer s.Close(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := baton.NewDoubleBarrier(s, "/barriers/batch-42", workers)
			if err := d.Enter(ctx); err != nil { // all start together
				panic(err)
			}
			mu.Lock()
			entered++
			mu.Unlock()
			if err := d.Leave(ctx); err != nil { // and finish together
				panic(err)
			}
			mu.Lock()
			left++
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Println(entered, "entered,", left, "left")
	// Output: 3 entered, 3 left
}
