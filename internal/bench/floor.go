package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/internal/rediskeys"
	"github.com/batonhq/baton/redis"
)

// The floors: the raw client operations one lock cycle needs on a store,
// issued directly with the stores' own Go clients. An uncontended baton
// cycle cannot be cheaper than its floor; the ratio between them is the
// library's overhead.

// floorTTL is the session TTL of the floor clients.
const floorTTL = 10 * time.Second

// ZKFloor cycles create(ephemeral sequential) + getChildren + delete with
// go-zookeeper.
type ZKFloor struct{ Hosts []string }

// Open connects one ZooKeeper session.
func (f ZKFloor) Open(ctx context.Context) (Client, error) {
	c, err := DialZK(ctx, f.Hosts, floorTTL)
	if err != nil {
		return nil, err
	}
	return &zkFloorClient{c: c}, nil
}

// DialZK connects a go-zookeeper session and waits until it is
// established. Session events are drained.
func DialZK(ctx context.Context, hosts []string, ttl time.Duration) (*zk.Conn, error) {
	c, events, err := zk.Connect(hosts, ttl, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	go func() {
		once := sync.Once{}
		for ev := range events {
			if ev.State == zk.StateHasSession {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
		return c, nil
	case <-ctx.Done():
		c.Close()
		return nil, ctx.Err()
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

type zkFloorClient struct {
	c *zk.Conn
}

func (c *zkFloorClient) Locker(name string) Locker   { return &zkFloorLocker{c: c.c, dir: name} }
func (c *zkFloorClient) Close(context.Context) error { c.c.Close(); return nil }

type zkFloorLocker struct {
	c    *zk.Conn
	dir  string
	path string
}

func (l *zkFloorLocker) Lock(ctx context.Context) error {
	p, err := l.c.Create(l.dir+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNoNode) {
		if err := zkMkdirs(l.c, l.dir); err != nil {
			return err
		}
		p, err = l.c.Create(l.dir+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	}
	if err != nil {
		return err
	}
	l.path = p
	_, _, err = l.c.Children(l.dir)
	return err
}

func (l *zkFloorLocker) Unlock(context.Context) error { return l.c.Delete(l.path, -1) }

func zkMkdirs(c *zk.Conn, dir string) error {
	p := ""
	for _, e := range strings.Split(strings.Trim(dir, "/"), "/") {
		p += "/" + e
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// EtcdFloor cycles one Txn (put our key under a lease if absent, and read
// the prefix) + one Delete with clientv3, on one client and lease per
// session.
type EtcdFloor struct {
	Endpoints []string
}

// Open connects one client and grants it a lease.
func (f EtcdFloor) Open(ctx context.Context) (Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: f.Endpoints, DialTimeout: 5 * time.Second, Context: context.Background(), Logger: nopLogger()})
	if err != nil {
		return nil, err
	}
	g, err := cli.Grant(ctx, int64(floorTTL/time.Second))
	if err != nil {
		cli.Close()
		return nil, err
	}
	kctx, cancel := context.WithCancel(context.Background())
	ka, err := cli.KeepAlive(kctx, g.ID)
	if err != nil {
		cancel()
		cli.Close()
		return nil, err
	}
	go func() {
		for range ka {
		}
	}()
	return &etcdFloorClient{cli: cli, lease: g.ID, stop: cancel}, nil
}

type etcdFloorClient struct {
	cli   *clientv3.Client
	lease clientv3.LeaseID
	stop  func()
	n     int
	mu    sync.Mutex
}

func (c *etcdFloorClient) Locker(name string) Locker {
	c.mu.Lock()
	c.n++
	key := fmt.Sprintf("%s/%x-%d", name, int64(c.lease), c.n)
	c.mu.Unlock()
	return &etcdFloorLocker{c: c, pfx: name + "/", key: key}
}

func (c *etcdFloorClient) Close(ctx context.Context) error {
	c.stop()
	_, _ = c.cli.Revoke(ctx, c.lease)
	return c.cli.Close()
}

type etcdFloorLocker struct {
	c        *etcdFloorClient
	pfx, key string
}

func (l *etcdFloorLocker) Lock(ctx context.Context) error {
	cmp := clientv3.Compare(clientv3.CreateRevision(l.key), "=", 0)
	put := clientv3.OpPut(l.key, "", clientv3.WithLease(l.c.lease))
	get := clientv3.OpGet(l.pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	_, err := l.c.cli.Txn(ctx).If(cmp).Then(put, get).Else(get).Commit()
	return err
}

func (l *etcdFloorLocker) Unlock(ctx context.Context) error {
	_, err := l.c.cli.Delete(ctx, l.key)
	return err
}

// unlockScript deletes the lock key only if it still holds our value.
const unlockScript = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// fencedUnlockScript deletes the lock key with one GETDEL, setting it back
// if it held another value.
const fencedUnlockScript = `local v = redis.call("getdel", KEYS[1]) if v == ARGV[1] then return 1 end if v then redis.call("set", KEYS[1], v, "PX", ARGV[2]) end return 0`

// RedisFloor cycles SET key value NX PX + EVAL (compare-and-delete) with
// go-redis. With several Addrs (Redlock) each step goes to every server in
// parallel: the parallel floor. Fenced, it draws a fencing token with
// INCR pipelined after the SET NX PX (one request) and releases with one
// EVAL running GETDEL: the least a lock with fencing tokens runs on a
// server without conditional delete (Redis before 8.4), four commands.
type RedisFloor struct {
	Addrs    []string
	Password string
	Fenced   bool
	// Sentinel, instead of Addrs, is a redis-sentinel:// URL: one client
	// on the master its sentinels name.
	Sentinel string
	// Wait, if set, follows the SET NX PX with WAIT Wait (pipelined, on
	// the same connection): the least a lock whose grants Wait replicas
	// acknowledge costs (redis.WithReplicas).
	Wait int
}

// Open connects one client per server.
func (f RedisFloor) Open(ctx context.Context) (Client, error) {
	if f.Sentinel != "" {
		opt, err := redis.FailoverOptions(f.Sentinel)
		if err != nil {
			return nil, err
		}
		rc := goredis.NewFailoverClient(opt)
		if err := rc.Ping(ctx).Err(); err != nil {
			_ = rc.Close()
			return nil, err
		}
		return &redisFloorClient{rcs: []*goredis.Client{rc}, fenced: f.Fenced, wait: f.Wait}, nil
	}
	rcs, err := dialRedis(ctx, f.Addrs, f.Password)
	if err != nil {
		return nil, err
	}
	return &redisFloorClient{rcs: rcs, fenced: f.Fenced, wait: f.Wait}, nil
}

type redisFloorClient struct {
	rcs    []*goredis.Client
	fenced bool
	wait   int
}

func (c *redisFloorClient) Locker(name string) Locker { return &redisFloorLocker{c: c, key: name} }
func (c *redisFloorClient) Close(context.Context) error {
	for _, rc := range c.rcs {
		_ = rc.Close()
	}
	return nil
}

type redisFloorLocker struct {
	c     *redisFloorClient
	key   string
	value string
	n     int
}

func (l *redisFloorLocker) Lock(ctx context.Context) error {
	l.n++
	l.value = fmt.Sprintf("%p-%d", l, l.n)
	return eachRedis(l.c.rcs, func(rc *goredis.Client) error {
		if l.c.wait > 0 {
			var w *goredis.Cmd
			_, err := rc.Pipelined(ctx, func(p goredis.Pipeliner) error {
				p.SetArgs(ctx, l.key, l.value, goredis.SetArgs{Mode: "NX", TTL: floorTTL})
				w = p.Do(ctx, "wait", l.c.wait, 1000)
				return nil
			})
			if err != nil {
				return err
			}
			if n, _ := w.Int64(); n < int64(l.c.wait) {
				return fmt.Errorf("bench: %d of %d replicas acknowledged", n, l.c.wait)
			}
			return nil
		}
		if l.c.fenced {
			_, err := rc.Pipelined(ctx, func(p goredis.Pipeliner) error {
				p.SetNX(ctx, l.key, l.value, floorTTL)
				p.Incr(ctx, l.key+rediskeys.Token)
				return nil
			})
			return err
		}
		return rc.SetArgs(ctx, l.key, l.value, goredis.SetArgs{Mode: "NX", TTL: floorTTL}).Err()
	})
}

func (l *redisFloorLocker) Unlock(ctx context.Context) error {
	return eachRedis(l.c.rcs, func(rc *goredis.Client) error {
		if l.c.fenced {
			return rc.Eval(ctx, fencedUnlockScript, []string{l.key}, l.value, floorTTL.Milliseconds()).Err()
		}
		return rc.Eval(ctx, unlockScript, []string{l.key}, l.value).Err()
	})
}
