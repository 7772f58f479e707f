package baton_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleGroupMember() {
	ctx := context.Background()
	store := memory.New()
	open := func(ctx context.Context) (*baton.Session, error) { return store.Open(ctx) }

	// Join the group as "worker-1" while ctx lasts; after a session loss
	// the member joins again on a new session.
	m := baton.NewGroupMember(open, "/services/workers", "worker-1", []byte("10.0.0.1:8080"))
	mctx, leave := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(mctx) }()
	_ = m.Wait(ctx)

	// Anyone can read (or Watch) the membership.
	s, _ := open(ctx)
	defer s.Close(ctx)
	members, _ := baton.NewGroup(s, "/services/workers").Members(ctx)
	for _, mb := range members {
		fmt.Printf("%s at %s\n", mb.ID, mb.Data)
	}
	leave()
	fmt.Println("run:", <-done)
	members, _ = baton.NewGroup(s, "/services/workers").Members(ctx)
	fmt.Println("members after leaving:", len(members))
	// Output:
	// worker-1 at 10.0.0.1:8080
	// run: context canceled
	// members after leaving: 0
}
