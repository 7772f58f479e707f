package baton_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

func ExampleRevocable() {
	ctx := context.Background()
	store := memory.New()
	holder, _ := store.Open(ctx)
	defer holder.Close(ctx)
	operator, _ := store.Open(ctx)
	defer operator.Close(ctx)

	m := baton.NewMutex(holder, "/locks/report", baton.Revocable())
	lease, err := m.Lock(ctx)
	if err != nil {
		panic(err)
	}
	// Another process asks the holder to let go (as `baton revoke` and
	// Curator's Revoker do).
	if _, err := baton.Revoke(ctx, operator, "/locks/report"); err != nil {
		panic(err)
	}
	<-lease.RevokeRequested() // cooperative: the holder decides
	fmt.Println("asked to let go; still held:", lease.Err() == nil)
	_ = m.Unlock(ctx)
	// Output: asked to let go; still held: true
}
