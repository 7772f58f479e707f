package baton_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleSharedCount() {
	ctx := context.Background()
	store := memory.New()
	s, _ := store.Open(ctx)
	defer s.Close(ctx)

	c := baton.NewSharedCount(s, "/config/workers", 3) // 3 until first set
	cur, _ := c.Get(ctx)
	ok, _ := c.TrySet(ctx, cur, cur.Value+1) // only if unchanged since read
	fmt.Println(cur.Value, ok)
	ok, _ = c.TrySet(ctx, cur, 10) // cur is stale now
	now, _ := c.Get(ctx)
	fmt.Println(ok, now.Value)
	// Output:
	// 3 true
	// false 4
}

func ExampleAtomicLong() {
	ctx := context.Background()
	store := memory.New()
	s, _ := store.Open(ctx)
	defer s.Close(ctx)

	hits := baton.NewAtomicLong(s, "/stats/hits", baton.PromotedToLock("/stats/hits-lock"))
	pre, post, err := hits.Add(ctx, 5)
	if err != nil {
		panic(err)
	}
	fmt.Println(pre, post)
	// Output: 0 5
}
