package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// lines keeps the in-process state of the contended floors, one T per lock
// name.
type lines[T any] struct {
	mu sync.Mutex
	m  map[string]*T
}

func (ls *lines[T]) get(name string) *T {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m == nil {
		ls.m = map[string]*T{}
	}
	l, ok := ls.m[name]
	if !ok {
		l = new(T)
		ls.m[name] = l
	}
	return l
}

// lineClient is one etcd client of a contended floor; each Locker gets a
// key of its own.
type lineClient struct {
	cli    *clientv3.Client
	locker func(c *lineClient, name, key string) Locker
	mu     sync.Mutex
	n      int
}

func openLineClient(endpoints []string, locker func(c *lineClient, name, key string) Locker) (Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Context: context.Background(), Logger: nopLogger()})
	if err != nil {
		return nil, err
	}
	return &lineClient{cli: cli, locker: locker}, nil
}

func (c *lineClient) Locker(name string) Locker {
	c.mu.Lock()
	c.n++
	key := fmt.Sprintf("%s/%p-%d", name, c, c.n)
	c.mu.Unlock()
	return c.locker(c, name, key)
}

func (c *lineClient) Close(context.Context) error { return c.cli.Close() }
