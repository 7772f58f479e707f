package bench

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/store"
	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/redis"
	"github.com/batonhq/baton/zk"
)

// StoreLabel names the store at u in results: its scheme, with the number
// of servers when there are several ("redlock5", "zk3").
func StoreLabel(u store.URL) string {
	if len(u.Hosts) > 1 {
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
	if u.Scheme == "memory" {
		st := memory.New()
		var opts []memory.Option
		if o.TTL != 0 {
			opts = append(opts, memory.WithTTL(o.TTL))
		}
		batonT.Factory = SessionFactory(func(ctx context.Context) (*baton.Session, error) { return st.Open(ctx, opts...) })
		floorT.Factory = batonT.Factory // the memory store has no client below baton's
		return batonT, floorT, nil
	}
	batonT.Factory = urlFactory{u: u, o: o}
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
		floorT.Factory = RedisFloor{Addrs: u.Hosts, Password: u.Password}
	default:
		return batonT, floorT, fmt.Errorf("bench: store %s not supported", u.Scheme)
	}
	floorT.Probe = batonT.Probe
	if r, ok := batonT.Probe.(*RedisProbe); ok {
		floorT.Probe = &RedisProbe{Addrs: r.Addrs, Password: r.Password}
	}
	return batonT, floorT, nil
}

// urlFactory opens each client with store.Open.
type urlFactory struct {
	u store.URL
	o store.Options
}

func (f urlFactory) Open(ctx context.Context) (Client, error) {
	s, err := store.Open(ctx, f.u, f.o)
	// store.Open flattens its error to one line: match the sentinel's text.
	if err != nil && (errors.Is(err, store.ErrUnavailable) || strings.Contains(err.Error(), store.ErrUnavailable.Error())) {
		return f.direct(ctx)
	}
	if err != nil {
		return nil, err
	}
	if s.Session != nil {
		return sessionClient{s.Session}, nil
	}
	return &leaseClient{
		lock: func(name string) LeaseHandle {
			if s.Quorum != nil {
				return redis.NewRedlock(s.Quorum, name, redis.WithTTL(s.TTL))
			}
			return redis.NewMutex(s.Redis, name, redis.WithTTL(s.TTL))
		},
		close: func() error { return s.Close(context.Background()) },
	}, nil
}

// direct opens a client with the backend package itself, for the store
// kinds the command line has not wired yet.
func (f urlFactory) direct(ctx context.Context) (Client, error) {
	switch f.u.Scheme {
	case store.ZooKeeper:
		s, err := zk.Open(ctx, f.u.Hosts, zk.WithTTL(f.o.TTL))
		if err != nil {
			return nil, err
		}
		return sessionClient{s}, nil
	case store.Redis:
		c, err := redis.Dial(ctx, redisURL(f.u))
		if err != nil {
			return nil, err
		}
		return &leaseClient{
			lock:  func(name string) LeaseHandle { return redis.NewMutex(c, name, redis.WithTTL(f.o.TTL)) },
			close: c.Close,
		}, nil
	}
	return nil, fmt.Errorf("bench: %s: %w", f.u.Scheme, store.ErrUnavailable)
}

// redisURL is u as redis.Dial takes it, credentials included.
func redisURL(u store.URL) string {
	auth := ""
	if u.User != "" || u.Password != "" {
		auth = url.UserPassword(u.User, u.Password).String() + "@"
	}
	return fmt.Sprintf("redis://%s%s/%d", auth, u.Hosts[0], u.DB)
}
