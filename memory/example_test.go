package memory_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/memory"
)

// Open takes the options every backend spells alike: WithTTL (here the
// session's) and WithTelemetry.
func ExampleStore_Open() {
	ctx := context.Background()
	store := memory.New()
	s, err := store.Open(ctx, memory.WithTTL(5*time.Second))
	if err != nil {
		panic(err)
	}
	defer s.Close(ctx)
	fmt.Println("ttl", s.TTL())

	_, err = store.Open(ctx, memory.WithTTL(time.Millisecond))
	fmt.Println("below the minimum:", errors.Is(err, baton.ErrInvalidTTL))
	// Output:
	// ttl 5s
	// below the minimum: true
}
