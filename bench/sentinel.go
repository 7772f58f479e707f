package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	goredislib "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/internal/bench"
	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/store"
)

// sentinelMaster is the name the bench's sentinels monitor the master by.
const sentinelMaster = "baton"

// sentinelReplicas is how many replicas the bench's master has; the
// acknowledged runs wait for all of them (redis.WithReplicas).
const sentinelReplicas = 2

// startSentinel starts a master, two replicas and three sentinels
// (Debian's redis-sentinel), and returns once both replicas are online and
// the sentinels name the master. The store is redis-sentinel://; baton
// runs without and with --replicas 2, next to redsync on the same master
// and two floors: SET NX PX alone, and followed by WAIT 2.
func (r *rig) startSentinel(base string) error {
	if err := r.add(startRedis(base, 0)); err != nil {
		return err
	}
	master := r.servers[0].addr
	_, mport, _ := strings.Cut(master, ":")
	for i := 1; i <= sentinelReplicas; i++ {
		if err := r.add(startRedis(base, i, "--replicaof", "127.0.0.1", mport, "--repl-diskless-sync-delay", "0")); err != nil {
			return err
		}
	}
	var sentinels []string
	for i := range 3 {
		s, err := startSentinelProc(base, i, mport)
		if err := r.add(s, err); err != nil {
			return err
		}
		sentinels = append(sentinels, s.addr)
	}
	if err := waitFor(30*time.Second, func() error { return sentinelReady(master, sentinels) }); err != nil {
		return fmt.Errorf("sentinel: %w", err)
	}
	if err := r.parse("redis-sentinel://" + strings.Join(sentinels, ",") + "/" + sentinelMaster); err != nil {
		return err
	}
	addrs := []string{master}
	probe := func() bench.Probe { return &bench.RedisProbe{Addrs: addrs} }
	r.probe = probe
	r.peer = bench.Target{Impl: "redsync", Factory: redsyncFactory{addrs}, Probe: probe()}
	ack, _, err := bench.Targets(r.url, store.Options{DialTimeout: 10 * time.Second, TTL: 10 * time.Second, Replicas: sentinelReplicas})
	if err != nil {
		return err
	}
	ack.Impl, ack.Probe = ackImpl, probe()
	r.extraImpls = []bench.Target{ack}
	r.cycleFloors = []bench.Target{{Impl: waitFloorImpl, Store: r.st, Factory: bench.RedisFloor{Addrs: addrs, Wait: sentinelReplicas}, Probe: probe()}}
	r.manyLocks = nil
	return nil
}

// The sentinel store's extra implementations.
const (
	ackImpl       = "baton --replicas 2"
	waitFloorImpl = "WAIT 2 floor"
)

// startSentinelProc starts sentinel i monitoring the master on port
// mport (quorum 2).
func startSentinelProc(base string, i int, mport string) (*server, error) {
	dir := filepath.Join(base, fmt.Sprintf("sentinel%d", i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freeport.Port()
	if err != nil {
		return nil, err
	}
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %s 2\n"+
		"sentinel down-after-milliseconds %s 2000\nsentinel failover-timeout %s 10000\n",
		port, dir, sentinelMaster, mport, sentinelMaster, sentinelMaster)
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	stop, err := startProc(dir, "sentinel", "redis-sentinel", path)
	if err != nil {
		return nil, err
	}
	return &server{name: "redis-sentinel", addr: fmt.Sprintf("127.0.0.1:%d", port), stop: stop}, nil
}

// sentinelReady checks that every sentinel names master and that the
// master has its replicas online.
func sentinelReady(master string, sentinels []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range sentinels {
		sc := goredislib.NewSentinelClient(&goredislib.Options{Addr: s, MaxRetries: -1})
		a, err := sc.GetMasterAddrByName(ctx, sentinelMaster).Result()
		_ = sc.Close()
		if err != nil || len(a) != 2 || a[0]+":"+a[1] != master {
			return fmt.Errorf("sentinel %s names %v (%v), not %s", s, a, err, master)
		}
	}
	rc := goredislib.NewClient(&goredislib.Options{Addr: master, MaxRetries: -1})
	defer rc.Close()
	info, err := rc.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if n := strings.Count(info, ",state=online,"); n < sentinelReplicas {
		return fmt.Errorf("%d of %d replicas online", n, sentinelReplicas)
	}
	return nil
}
