package baton_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

// Example is the README's library example: a lock, then an election. The
// README shows the lines between "README:" and "end README" as they are
// (cmd/baton's TestDocs checks that they match).
func Example() {
	// README:
	ctx := context.Background()
	s, err := memory.New().Open(ctx) // or zk.Open, etcd.Open, postgres.Open
	if err != nil {
		panic(err)
	}
	defer s.Close(ctx)

	m := baton.NewMutex(s, "jobs/nightly")
	lease, err := m.Lock(ctx) // waits its turn; cancelling ctx leaves no trace
	if err != nil {
		panic(err)
	}
	work, stop := lease.Context(ctx) // cancelled if the lock is lost
	nightly(work, lease.Token())     // pass the fencing token to what the work writes
	stop()
	_ = m.Unlock(ctx) // releases even if ctx is done by then

	e := baton.NewElection(s, "scheduler")
	if err := e.Campaign(ctx, []byte("host-a")); err != nil { // waits until we lead
		panic(err)
	}
	fmt.Println("leading, token", e.Lease().Token())
	_ = e.Resign(ctx)
	// end README

	// Output:
	// nightly job, fencing token 1
	// leading, token 3
}

// nightly stands for the work done holding the lock: it stops when ctx
// is done, and hands token to what it writes.
func nightly(ctx context.Context, token int64) {
	if ctx.Err() == nil {
		fmt.Println("nightly job, fencing token", token)
	}
}
