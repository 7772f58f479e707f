package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/etcd/embedded"
)

func main() {
	ep := flag.String("endpoints", "", "etcd endpoint; empty starts an embedded server")
	n := flag.Int("n", 8, "contenders")
	dur := flag.Duration("d", 3*time.Second, "duration")
	flag.Parse()
	ctx := context.Background()
	eps := []string{*ep}
	if *ep == "" {
		dir, _ := os.MkdirTemp("", "hb")
		defer os.RemoveAll(dir)
		s, err := embedded.Start(ctx, embedded.Config{DataDir: dir, Fast: os.Getenv("FAST") != ""})
		if err != nil {
			panic(err)
		}
		defer s.Close()
		eps = s.Endpoints()
	}
	for _, impl := range []string{"concurrency", "baton", "concurrency", "baton"} {
		run(ctx, impl, eps, *n, *dur)
	}
}

func run(ctx context.Context, impl string, eps []string, n int, dur time.Duration) {
	name := fmt.Sprintf("/bench/%s/%d", impl, time.Now().UnixNano())
	var lastRelease atomic.Int64
	var mu sync.Mutex
	var handoffs []time.Duration
	var acq atomic.Int64
	var wg sync.WaitGroup
	type locker struct {
		lock, unlock func() error
		close        func()
	}
	lockers := make([]locker, n)
	for i := range lockers {
		switch impl {
		case "baton":
			s, err := etcd.Open(ctx, eps, etcd.WithTTL(10*time.Second))
			if err != nil {
				panic(err)
			}
			m := baton.NewMutex(s, name)
			lockers[i] = locker{
				lock:   func() error { _, err := m.Lock(ctx); return err },
				unlock: func() error { return m.Unlock(ctx) },
				close:  func() { s.Close(ctx) },
			}
		default:
			cli, err := clientv3.New(clientv3.Config{Endpoints: eps})
			if err != nil {
				panic(err)
			}
			s, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
			if err != nil {
				panic(err)
			}
			m := concurrency.NewMutex(s, name)
			lockers[i] = locker{
				lock:   func() error { return m.Lock(ctx) },
				unlock: func() error { return m.Unlock(ctx) },
				close:  func() { s.Close(); cli.Close() },
			}
		}
	}
	deadline := time.Now().Add(dur)
	start := time.Now()
	for i := range lockers {
		l := lockers[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := l.lock(); err != nil {
					panic(err)
				}
				if r := lastRelease.Load(); r != 0 {
					d := time.Since(time.Unix(0, r))
					mu.Lock()
					handoffs = append(handoffs, d)
					mu.Unlock()
				}
				acq.Add(1)
				lastRelease.Store(time.Now().UnixNano())
				if err := l.unlock(); err != nil {
					panic(err)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	for _, l := range lockers {
		l.close()
	}
	sort.Slice(handoffs, func(i, j int) bool { return handoffs[i] < handoffs[j] })
	p := func(q float64) time.Duration {
		if len(handoffs) == 0 {
			return 0
		}
		return handoffs[int(q*float64(len(handoffs)-1))]
	}
	slow := 0
	for _, h := range handoffs {
		if h > 50*time.Millisecond {
			slow++
		}
	}
	fmt.Printf("slow(>50ms)=%d ", slow)
	fmt.Printf("%-12s n=%d acq=%d acq/s=%.0f handoff p50=%v p99=%v max=%v\n", impl, n, acq.Load(),
		float64(acq.Load())/el.Seconds(), p(0.5).Round(10*time.Microsecond), p(0.99).Round(10*time.Microsecond), p(1).Round(10*time.Microsecond))
}
