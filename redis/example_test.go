package redis_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/batonhq/baton/redis"
)

// A fair lock with a fencing token on one Redis server.
func ExampleMutex() {
	ctx := context.Background()
	c, err := redis.Dial(ctx, "redis://:secret@127.0.0.1:6379/0")
	if err != nil {
		log.Fatal(err) // a wrong password fails here, without printing it
	}
	defer c.Close()

	m := redis.NewMutex(c, "nightly-report", redis.WithTTL(10*time.Second))
	lease, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Unlock(ctx)

	// Stop the work when the lock may be lost, and pass the token to the
	// resource so it can refuse a stale holder.
	work, cancel := lease.Context(ctx)
	defer cancel()
	fmt.Println("holding with token", lease.Token(), work.Err() == nil)
}

// Redlock over five independent masters.
func ExampleRedlock() {
	ctx := context.Background()
	q, err := redis.DialRedlock(ctx, []string{
		"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379",
		"redis://10.0.0.4:6379", "redis://10.0.0.5:6379",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	m := redis.NewRedlock(q, "nightly-report")
	lease, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err) // wraps redis.ErrNoQuorum when a majority is down
	}
	defer m.Unlock(ctx)
	<-lease.Done() // closed on Unlock, or when renewal loses the majority
}
