package baton_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleElection_Campaign() {
	ctx := context.Background()
	store := memory.New()
	a, _ := store.Open(ctx)
	b, _ := store.Open(ctx)
	defer a.Close(ctx)
	defer b.Close(ctx)

	ea, eb := baton.NewElection(a, "/election/scheduler"), baton.NewElection(b, "/election/scheduler")
	if err := ea.Campaign(ctx, []byte("host-a")); err != nil {
		panic(err)
	}
	won := make(chan error)
	go func() { won <- eb.Campaign(ctx, []byte("host-b")) }()

	leader, _, _ := eb.Leader(ctx)
	fmt.Println("leader:", string(leader))

	_ = ea.Resign(ctx) // hand over
	if err := <-won; err != nil {
		panic(err)
	}
	leader, _, _ = ea.Leader(ctx)
	fmt.Println("leader:", string(leader))

	_ = eb.Resign(ctx)
	_, _, err := ea.Leader(ctx)
	fmt.Println(errors.Is(err, baton.ErrNoLeader))
	// Output:
	// leader: host-a
	// leader: host-b
	// true
}

func ExampleElection_Run() {
	ctx := context.Background()
	store := memory.New()
	s, _ := store.Open(ctx)
	defer s.Close(ctx)

	// Run the scheduler only while leader; its ctx is cancelled if the
	// leadership is lost. Here the work ends by itself with an error.
	e := baton.NewElection(s, "/election/scheduler")
	err := e.Run(ctx, []byte("host-a"), func(ctx context.Context) error {
		fmt.Println("leading")
		return errors.New("done for today")
	})
	fmt.Println(err)
	// Output:
	// leading
	// done for today
}

func ExampleElection_Observe() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := memory.New()
	s, _ := store.Open(ctx)
	defer s.Close(ctx)

	e := baton.NewElection(s, "/election/scheduler")
	events := e.Observe(ctx)
	ev := <-events
	fmt.Println("leader?", ev.HasLeader())

	_ = e.Campaign(ctx, []byte("host-a"))
	ev = <-events
	fmt.Println("leader:", string(ev.Value))
	// Output:
	// leader? false
	// leader: host-a
}
