package baton_test

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExamplePriorityQueue() {
	ctx := context.Background()
	s, _ := memory.New().Open(ctx)
	defer s.Close(ctx)

	q := baton.NewPriorityQueue(s, "/jobs/urgent-first")
	_ = q.Put(ctx, []byte("rebuild index"), 10)
	_ = q.Put(ctx, []byte("page on-call"), -1) // lower comes out first
	_ = q.Put(ctx, []byte("send digest"), 10)

	for range 3 {
		job, _ := q.Take(ctx)
		fmt.Println(string(job))
	}
	// Output:
	// page on-call
	// rebuild index
	// send digest
}

func ExampleDelayQueue() {
	ctx := context.Background()
	s, _ := memory.New().Open(ctx)
	defer s.Close(ctx)

	q := baton.NewDelayQueue(s, "/jobs/retry")
	start := time.Now()
	_ = q.Put(ctx, []byte("retry upload"), 50*time.Millisecond)

	// Claim, then Ack: if this consumer died before the Ack, the item
	// would go back to the queue.
	it, _ := q.Claim(ctx)
	fmt.Println(string(it.Data), "after its delay:", time.Since(start) >= 50*time.Millisecond)
	_ = q.Ack(ctx, it)
	// Output:
	// retry upload after its delay: true
}
