package main

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/go-zookeeper/zk"
	goredislib "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/bench"
)

// peerTTL is the session TTL (lock expiry for redsync) of every peer
// client, the same as baton's default.
const peerTTL = 10 * time.Second

// zkLockFactory: go-zookeeper's zk.Lock, one zk.Conn per client.
type zkLockFactory struct{ hosts []string }

func (f zkLockFactory) Open(ctx context.Context) (bench.Client, error) {
	c, err := bench.DialZK(ctx, f.hosts, peerTTL)
	if err != nil {
		return nil, err
	}
	return zkLockClient{c}, nil
}

type zkLockClient struct{ c *zk.Conn }

func (c zkLockClient) Locker(name string) bench.Locker {
	return zkLocker{zk.NewLock(c.c, name, zk.WorldACL(zk.PermAll))}
}
func (c zkLockClient) Close(context.Context) error { c.c.Close(); return nil }

func (c zkLockClient) Contenders(_ context.Context, name string) (int, error) {
	kids, _, err := c.c.Children(name)
	if err == zk.ErrNoNode {
		return 0, nil
	}
	return len(kids), err
}

// zkLocker adapts zk.Lock, which takes no ctx: Lock waits for its turn.
type zkLocker struct{ l *zk.Lock }

func (l zkLocker) Lock(context.Context) error   { return l.l.Lock() }
func (l zkLocker) Unlock(context.Context) error { return l.l.Unlock() }

// etcdMutexFactory: etcd's concurrency.Mutex, one client per client and
// one concurrency.Session (lease) per lock handle, as the package requires
// (two Mutexes on one session share a key).
type etcdMutexFactory struct{ endpoints []string }

func (f etcdMutexFactory) Open(ctx context.Context) (bench.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: f.endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	if _, err := cli.Get(ctx, "health-check"); err != nil {
		cli.Close()
		return nil, err
	}
	return &etcdMutexClient{cli: cli}, nil
}

type etcdMutexClient struct {
	cli *clientv3.Client

	mu       sync.Mutex
	sessions []*concurrency.Session
}

func (c *etcdMutexClient) Locker(name string) bench.Locker {
	return &etcdLocker{c: c, name: name}
}

func (c *etcdMutexClient) Close(context.Context) error {
	c.mu.Lock()
	for _, s := range c.sessions {
		_ = s.Close()
	}
	c.mu.Unlock()
	return c.cli.Close()
}

func (c *etcdMutexClient) Contenders(ctx context.Context, name string) (int, error) {
	r, err := c.cli.Get(ctx, name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return int(r.Count), nil
}

// etcdLocker opens its session on first use.
type etcdLocker struct {
	c    *etcdMutexClient
	name string
	m    *concurrency.Mutex
}

func (l *etcdLocker) Lock(ctx context.Context) error {
	if l.m == nil {
		s, err := concurrency.NewSession(l.c.cli, concurrency.WithTTL(int(peerTTL/time.Second)), concurrency.WithContext(context.Background()))
		if err != nil {
			return err
		}
		l.c.mu.Lock()
		l.c.sessions = append(l.c.sessions, s)
		l.c.mu.Unlock()
		l.m = concurrency.NewMutex(s, l.name)
	}
	return l.m.Lock(ctx)
}

func (l *etcdLocker) Unlock(ctx context.Context) error { return l.m.Unlock(ctx) }

// redsyncFactory: redsync over one go-redis client per server (Redlock
// when there are several). Tries are unbounded (ctx ends the wait) so that
// no waiter gives up; the retry delay is redsync's default, 50–250 ms.
type redsyncFactory struct{ addrs []string }

func (f redsyncFactory) Open(ctx context.Context) (bench.Client, error) {
	var pools []redis.Pool
	var rcs []*goredislib.Client
	for _, a := range f.addrs {
		rc := goredislib.NewClient(&goredislib.Options{Addr: a, ContextTimeoutEnabled: true})
		if err := rc.Ping(ctx).Err(); err != nil {
			for _, c := range rcs {
				_ = c.Close()
			}
			_ = rc.Close()
			return nil, err
		}
		rcs = append(rcs, rc)
		pools = append(pools, goredis.NewPool(rc))
	}
	return redsyncClient{rs: redsync.New(pools...), rcs: rcs}, nil
}

type redsyncClient struct {
	rs  *redsync.Redsync
	rcs []*goredislib.Client
}

func (c redsyncClient) Locker(name string) bench.Locker {
	return redsyncLocker{c.rs.NewMutex(name, redsync.WithExpiry(peerTTL), redsync.WithTries(math.MaxInt32))}
}

func (c redsyncClient) Close(context.Context) error {
	for _, rc := range c.rcs {
		_ = rc.Close()
	}
	return nil
}

type redsyncLocker struct{ m *redsync.Mutex }

func (l redsyncLocker) Lock(ctx context.Context) error { return l.m.LockContext(ctx) }
func (l redsyncLocker) Unlock(ctx context.Context) error {
	_, err := l.m.UnlockContext(ctx)
	return err
}

// redsyncClusterFactory: redsync over one go-redis ClusterClient (one
// pool: a cluster is one Redis, not Redlock's independent masters).
type redsyncClusterFactory struct{ addrs []string }

func (f redsyncClusterFactory) Open(ctx context.Context) (bench.Client, error) {
	cc := goredislib.NewClusterClient(&goredislib.ClusterOptions{Addrs: f.addrs, ContextTimeoutEnabled: true})
	if err := cc.Ping(ctx).Err(); err != nil {
		_ = cc.Close()
		return nil, err
	}
	return redsyncClusterClient{rs: redsync.New(goredis.NewPool(cc)), cc: cc}, nil
}

type redsyncClusterClient struct {
	rs *redsync.Redsync
	cc *goredislib.ClusterClient
}

func (c redsyncClusterClient) Locker(name string) bench.Locker {
	return redsyncLocker{c.rs.NewMutex(name, redsync.WithExpiry(peerTTL), redsync.WithTries(math.MaxInt32))}
}

func (c redsyncClusterClient) Close(context.Context) error { return c.cc.Close() }
