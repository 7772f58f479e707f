package baton_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleLeaderSelector_Run() {
	ctx := context.Background()
	store := memory.New()
	s, _ := store.Open(ctx)
	defer s.Close(ctx)

	sel := baton.NewLeaderSelector(s, "/services/reporter", []byte("host-1"))
	ctx, stop := context.WithCancel(ctx)
	turns := 0
	err := sel.Run(ctx, func(work context.Context, lease *baton.Lease) error {
		// work is cancelled if the leadership is lost; returning ends the
		// turn and Run campaigns again (auto-requeue).
		turns++
		fmt.Println("turn", turns, "leading:", sel.Leading())
		if turns == 2 {
			stop()
		}
		return nil
	})
	fmt.Println("run:", err)
	// Output:
	// turn 1 leading: true
	// turn 2 leading: true
	// run: context canceled
}
