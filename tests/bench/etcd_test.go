package bench_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/bench"
	"github.com/batonhq/baton/internal/etcdtest"
)

// The etcd floor is one Txn and one Delete: the server's own counter must
// say two requests per cycle (keep-alives aside).
func TestEtcdFloorAndProbe(t *testing.T) {
	srv := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg := bench.Target{Impl: "floor", Store: "etcd", Factory: bench.EtcdFloor{Endpoints: srv.Endpoints()}, Probe: bench.EtcdProbe{URLs: srv.Endpoints()}}
	r, err := bench.Run(ctx, tg, bench.Config{Workload: "floor", Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Acquisitions == 0 || r.Errors != 0 {
		t.Fatalf("acquisitions %d errors %d", r.Acquisitions, r.Errors)
	}
	if r.ServerRequestsPerAcq == nil || math.Abs(*r.ServerRequestsPerAcq-2) > 0.2 {
		t.Fatalf("server requests per cycle = %v, want about 2", r.ServerRequestsPerAcq)
	}
}

// TestEtcdRelay: the relay floor hands the lock on in turn, one holder at
// a time, with one write per hand-off.
func TestEtcdRelay(t *testing.T) {
	srv := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg := bench.Target{Impl: "relay floor", Store: "etcd", Factory: &bench.EtcdRelay{Endpoints: srv.Endpoints()}, Probe: bench.EtcdProbe{URLs: srv.Endpoints()}}
	r, err := bench.Run(ctx, tg, bench.Config{Workload: "contended", Clients: 4, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// A release that finds nobody in line frees the lock, and its
	// releaser may take it back: rare, since the others wait.
	reacquired, perAcq := math.Inf(1), math.Inf(1)
	if r.ReacquirePct != nil && r.ServerRequestsPerAcq != nil {
		reacquired, perAcq = *r.ReacquirePct, *r.ServerRequestsPerAcq
	}
	if r.Acquisitions == 0 || r.Errors != 0 || r.Overlaps != 0 || reacquired > 10 || perAcq > 1.2 {
		t.Fatalf("%d acquisitions, %d errors, %d overlaps, %v%% re-acquired, %v requests per acquisition (%s); want hand-offs to another client, one write each",
			r.Acquisitions, r.Errors, r.Overlaps, reacquired, perAcq, r.Note)
	}
}
