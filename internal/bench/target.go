package bench

import (
	"context"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/store"
	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/postgres"
)

// StoreLabel names the store at u in results: its scheme, with the number
// of servers when there are several ("redlock5", "zk3"; a Redis Cluster
// is "redis-cluster", however many nodes its URL names).
func StoreLabel(u store.URL) string {
	if len(u.Hosts) > 1 && !u.IsRedisCluster() {
		return fmt.Sprintf("%s%d", u.Scheme, len(u.Hosts))
	}
	return u.Scheme
}

// Targets returns baton's target and the floor's target on the store at
// u. Every baton client opens its own session (or Redis clients) with
// store.Open, as the command line does.
func Targets(u store.URL, o store.Options) (batonT, floorT Target, err error) {
	label := StoreLabel(u)
	batonT = Target{Impl: "baton", Store: label}
	floorT = Target{Impl: "floor", Store: label}
	if u.InProcess() {
		st := memory.New()
		var opts []memory.Option
		if o.TTL != 0 {
			opts = append(opts, memory.WithTTL(o.TTL))
		}
		batonT.Factory = SessionFactory(func(ctx context.Context) (*baton.Session, error) { return st.Open(ctx, opts...) })
		floorT.Factory = batonT.Factory // the memory store has no client below baton's
		return batonT, floorT, nil
	}
	batonT.Factory = StoreFactory(func(ctx context.Context) (*store.Store, error) { return store.Open(ctx, u, o) })
	switch u.Scheme {
	case store.ZooKeeper:
		if u.Chroot != "" {
			return batonT, floorT, fmt.Errorf("bench: a chroot is not supported (%s)", u)
		}
		batonT.Probe = ZKProbe{Hosts: u.Hosts}
		floorT.Factory = ZKFloor{Hosts: u.Hosts}
	case store.Etcd:
		var urls []string
		for _, h := range u.Hosts {
			urls = append(urls, "http://"+h)
		}
		batonT.Probe = EtcdProbe{URLs: urls}
		floorT.Factory = EtcdFloor{Endpoints: urls}
	case store.Redis, store.Redlock:
		batonT.Probe = &RedisProbe{Addrs: u.Hosts, Password: u.Password}
		floorT.Factory = RedisFloor{Addrs: u.Hosts, Password: u.Password, Wait: o.Replicas}
	case store.RedisSentinel:
		// No probe: the master moves. With --replicas, the floor waits
		// for as many replicas as baton does.
		floorT.Factory = RedisFloor{Sentinel: u.Unredacted(), Wait: o.Replicas}
	case store.Postgres:
		// pgx takes libpq's parameters; baton's schema= is not one.
		dsn, _, err := postgres.SplitSchema(u.Unredacted())
		if err != nil {
			return batonT, floorT, err
		}
		batonT.Probe = PostgresProbe{URL: dsn}
		floorT.Factory = PostgresFloor{DSN: dsn}
	case store.RedisCluster:
		// No probe: the URL need not name every master, and a replica
		// counts the commands it replays as its own.
		floorT.Factory = RedisClusterFloor{Addrs: u.Hosts, Password: u.Password}
	default:
		return batonT, floorT, fmt.Errorf("bench: store %s not supported", u.Scheme)
	}
	floorT.Probe = batonT.Probe
	if r, ok := batonT.Probe.(*RedisProbe); ok {
		floorT.Probe = &RedisProbe{Addrs: r.Addrs, Password: r.Password}
	}
	return batonT, floorT, nil
}
