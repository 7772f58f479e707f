package zk

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/zktest"
)

// Benchmarks of Mutex against go-zookeeper's Lock on the same server. They
// report requests per acquisition next to ns/op; contended runs report
// acquisitions per second across all clients.

func benchMutex(b *testing.B, clients int) {
	ctx := context.Background()
	path := testPath(b)
	ms := make([]*baton.Mutex, clients)
	conns := make([]*conn, clients)
	for i := range ms {
		s := openT(b, 10*time.Second)
		ms[i], conns[i] = baton.NewMutex(s, path), sessionOf(s)
	}
	if _, err := ms[0].Lock(ctx); err != nil { // warm up, create the parent
		b.Fatal(err)
	}
	_ = ms[0].Unlock(ctx)
	var before int64
	for _, c := range conns {
		before += c.Requests()
	}
	b.ResetTimer()
	start := time.Now()
	runClients(b, clients, func(i int) error {
		if _, err := ms[i].Lock(ctx); err != nil {
			return err
		}
		return ms[i].Unlock(ctx)
	})
	elapsed := time.Since(start)
	b.StopTimer()
	var after int64
	for _, c := range conns {
		after += c.Requests()
	}
	b.ReportMetric(float64(after-before)/float64(b.N), "requests/acq")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "acq/s")
}

func benchGoZK(b *testing.B, clients int) {
	path := testPath(b)
	ls := make([]*gozk.Lock, clients)
	for i := range ls {
		zc, _, err := gozk.Connect(zktest.Shared(b).Servers(), 10*time.Second, gozk.WithLogger(nopLogger{}))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(zc.Close)
		ls[i] = gozk.NewLock(zc, path, gozk.WorldACL(gozk.PermAll))
	}
	if err := ls[0].Lock(); err != nil {
		b.Fatal(err)
	}
	_ = ls[0].Unlock()
	b.ResetTimer()
	start := time.Now()
	runClients(b, clients, func(i int) error {
		if err := ls[i].Lock(); err != nil {
			return err
		}
		return ls[i].Unlock()
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "acq/s")
}

// runClients runs b.N cycles spread over clients goroutines.
func runClients(b *testing.B, clients int, cycle func(i int) error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= b.N {
					mu.Unlock()
					return
				}
				next++
				mu.Unlock()
				if err := cycle(i); err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func BenchmarkMutexUncontended(b *testing.B)    { benchMutex(b, 1) }
func BenchmarkGoZKLockUncontended(b *testing.B) { benchGoZK(b, 1) }
func BenchmarkMutexContended8(b *testing.B)     { benchMutex(b, 8) }
func BenchmarkGoZKLockContended8(b *testing.B)  { benchGoZK(b, 8) }
