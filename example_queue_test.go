package baton_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleQueue() {
	ctx := context.Background()
	store := memory.New()
	s, _ := store.Open(ctx)
	defer s.Close(ctx)

	q := baton.NewQueue(s, "/queues/jobs")
	for _, job := range []string{"build", "test", "ship"} {
		if err := q.Put(ctx, []byte(job)); err != nil {
			panic(err)
		}
	}
	n, _ := q.Len(ctx)
	fmt.Println(n, "jobs")
	for range n {
		job, err := q.Take(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println(string(job))
	}
	// Output:
	// 3 jobs
	// build
	// test
	// ship
}

func ExampleReliableQueue() {
	ctx := context.Background()
	store := memory.New()
	worker, _ := store.Open(ctx)
	other, _ := store.Open(ctx)
	defer other.Close(ctx)

	q := baton.NewReliableQueue(worker, "/queues/emails")
	_ = q.Put(ctx, []byte("welcome mail"))
	it, _ := q.Take(ctx)
	fmt.Println("worker took:", string(it.Data))

	// The worker dies before acknowledging: the item goes back.
	_ = worker.Close(ctx)
	q2 := baton.NewReliableQueue(other, "/queues/emails")
	it, _ = q2.Take(ctx)
	fmt.Println("other took:", string(it.Data))
	if err := q2.Ack(ctx, it); err != nil {
		panic(err)
	}
	n, _ := q2.Len(ctx)
	fmt.Println(n, "left")
	// Output:
	// worker took: welcome mail
	// other took: welcome mail
	// 0 left
}
