package baton_test

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleLockDelay() {
	ctx := context.Background()
	store := memory.New()
	a, _ := store.Open(ctx)
	b, _ := store.Open(ctx)
	defer b.Close(ctx)

	const delay = 200 * time.Millisecond
	if _, err := baton.NewMutex(a, "/locks/ledger", baton.LockDelay(delay)).Lock(ctx); err != nil {
		panic(err)
	}
	store.Expire(a.ID()) // the holder's session ends without a release

	start := time.Now()
	m := baton.NewMutex(b, "/locks/ledger", baton.LockDelay(delay))
	if _, err := m.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("waited out the lock-delay:", time.Since(start) >= delay)
	_ = m.Unlock(ctx) // a clean release: the next holder is not delayed
	// Output: waited out the lock-delay: true
}
