// Command footprint measures what waiting costs a client process: one
// ZooKeeper session, N baton.Mutex handles queued behind a holder, and the
// process's resident set once they are all in line. It imports only baton
// and its ZooKeeper backend, so that the figure is the library's and not a
// larger program's (the baton command links an etcd server).
//
//	footprint -zk 127.0.0.1:2181 -waiters 1000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/zk"
)

// result uses the field names of internal/bench's Result.
type result struct {
	Impl         string  `json:"impl"`
	Store        string  `json:"store"`
	Workload     string  `json:"workload"`
	Clients      int     `json:"clients"`
	Acquisitions int     `json:"acquisitions"`
	Seconds      float64 `json:"seconds"`
	AcqPerS      float64 `json:"acq_per_s"`
	RSSMB        float64 `json:"rss_mb"`
	HeapMB       float64 `json:"heap_mb"`
	Errors       int     `json:"errors"`
	Note         string  `json:"note"`
}

func main() {
	server := flag.String("zk", "127.0.0.1:2181", "ZooKeeper host:port")
	waiters := flag.Int("waiters", 1000, "Mutex handles queued on the one session")
	flag.Parse()
	r, err := run(*server, *waiters)
	if err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

func run(server string, n int) (result, error) {
	r := result{Impl: "baton", Store: "zk", Workload: "footprint", Clients: n}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	holderS, err := zk.Open(ctx, []string{server})
	if err != nil {
		return r, err
	}
	defer holderS.Close(context.Background())
	s, err := zk.Open(ctx, []string{server})
	if err != nil {
		return r, err
	}
	defer s.Close(context.Background())
	name := fmt.Sprintf("/baton-footprint/%d", time.Now().UnixNano())
	holder := baton.NewMutex(holderS, name)
	if _, err := holder.Lock(ctx); err != nil {
		return r, err
	}
	runtime.GC()
	debug.FreeOSMemory()
	base, _ := status("VmRSS")

	var wg sync.WaitGroup
	var got, errs atomic.Int64
	var first atomic.Value
	for lo := 0; lo < n; lo += 50 {
		hi := min(lo+50, n)
		for range hi - lo {
			m := baton.NewMutex(s, name)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := m.Lock(ctx); err != nil {
					errs.Add(1)
					first.CompareAndSwap(nil, err.Error())
					return
				}
				got.Add(1)
				_ = m.Unlock(context.WithoutCancel(ctx))
			}()
		}
		if err := inLine(ctx, holderS, name, hi+1, &errs); err != nil {
			_ = holder.Unlock(ctx)
			wg.Wait()
			return r, err
		}
	}
	raw, _ := status("VmRSS")
	goroutines := runtime.NumGoroutine()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.HeapMB = float64(ms.HeapInuse) / (1 << 20)
	r.RSSMB, _ = status("VmRSS")
	peak, _ := status("VmHWM")

	start := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		return r, err
	}
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	r.Acquisitions = int(got.Load())
	r.AcqPerS = float64(r.Acquisitions) / r.Seconds
	r.Errors = int(errs.Load())
	r.Note = fmt.Sprintf("footprint program (baton + zk only); one session; RSS %.1f MB before waiters joined, %.1f MB with them before a GC, peak %.1f MB; %d goroutines",
		base, raw, peak, goroutines)
	if e := first.Load(); e != nil {
		r.Note += fmt.Sprintf("; first error: %v", e)
	}
	return r, nil
}

// inLine waits until want contenders are queued on name.
func inLine(ctx context.Context, s *baton.Session, name string, want int, errs *atomic.Int64) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		kids, err := s.Conn().Children(ctx, name)
		if err != nil {
			return err
		}
		if len(kids) >= want {
			return nil
		}
		if errs.Load() > 0 || time.Now().After(deadline) {
			return fmt.Errorf("%d of %d in line, %d failed", len(kids), want, errs.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// status reads a memory field of /proc/self/status in MB.
func status(field string) (float64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no %s", field)
}
