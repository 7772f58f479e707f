package etcd_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/etcd"
	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/layout"
)

// The service interop tests drive etcd's own lock and election services
// (v3lock, v3election: what other languages reach over gRPC or the HTTP
// gateway) and etcd's experimental recipes against baton's recipes on one
// name, on the embedded server.

// statusOf reads name with the layout reader, as `baton status` does.
func statusOf(t *testing.T, ctx context.Context, s *baton.Session, name string) layout.Report {
	t.Helper()
	l, err := layout.Read(ctx, s.Conn(), layout.StoreEtcd, name)
	if err != nil {
		t.Fatal(err)
	}
	return layout.Describe(l, time.Now())
}

// waitChildren waits until name has n children.
func waitChildren(t *testing.T, ctx context.Context, s *baton.Session, name string, n int) {
	t.Helper()
	if !await.Within(10*time.Second, func() bool {
		kids, err := s.Conn().Children(ctx, name)
		return err == nil && len(kids) == n
	}) {
		t.Fatalf("%s never had %d children", name, n)
	}
}

func grant(t *testing.T, ctx context.Context, cli *clientv3.Client) clientv3.LeaseID {
	t.Helper()
	l, err := cli.Grant(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	return l.ID
}

func TestInteropLockService(t *testing.T) {
	ctx := testCtx(t)
	eps := server(t).Endpoints()
	s := openT(t, eps, etcd.WithTTL(10*time.Second))
	cli := rawClient(t, eps)
	name := fmt.Sprintf("/interop/v3lock-%d", time.Now().UnixNano())
	lc := v3lockpb.NewLockClient(cli.ActiveConnection())

	m := baton.NewMutex(s, name)
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var released atomic.Bool
	got := make(chan *v3lockpb.LockResponse, 1)
	go func() {
		r, err := lc.Lock(ctx, &v3lockpb.LockRequest{Name: []byte(name), Lease: int64(grant(t, ctx, cli))})
		if err != nil || !released.Load() {
			t.Errorf("v3lock Lock: %v (granted while baton held: %v)", err, !released.Load())
		}
		got <- r
	}()
	waitChildren(t, ctx, s, name, 2)
	r := statusOf(t, ctx, s, name)
	if r.Holders != 1 || r.Waiters != 1 || r.Entries[0].Peer != layout.PeerBaton || r.Entries[1].Peer != layout.PeerEtcd ||
		r.Entries[1].Identity != "foreign" || r.Entries[1].TTL <= 0 {
		t.Fatalf("status: %+v", r)
	}
	released.Store(true)
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	held := <-got
	if held == nil {
		t.FailNow()
	}
	if _, err := m.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock under the service's lock: %v", err)
	}
	if _, err := lc.Unlock(ctx, &v3lockpb.UnlockRequest{Key: held.Key}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after the service's unlock: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// The same service through the HTTP gateway, as curl would use it.
	post := func(path string, body any) map[string]any {
		b, _ := json.Marshal(body)
		resp, err := http.Post(eps[0]+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v %v", path, resp.StatusCode, out, err)
		}
		return out
	}
	out := post("/v3/lock/lock", map[string]any{"name": base64.StdEncoding.EncodeToString([]byte(name)), "lease": fmt.Sprint(int64(grant(t, ctx, cli)))})
	if _, err := m.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock under the gateway's lock: %v", err)
	}
	post("/v3/lock/unlock", map[string]any{"key": out["key"]})
	if _, err := m.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after the gateway's unlock: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestInteropElectionService(t *testing.T) {
	ctx := testCtx(t)
	eps := server(t).Endpoints()
	s := openT(t, eps, etcd.WithTTL(10*time.Second))
	cli := rawClient(t, eps)
	name := fmt.Sprintf("/interop/v3election-%d", time.Now().UnixNano())
	ec := v3electionpb.NewElectionClient(cli.ActiveConnection())

	e := baton.NewElection(s, name)
	if err := e.Campaign(ctx, []byte("baton")); err != nil {
		t.Fatal(err)
	}
	var resigned atomic.Bool
	got := make(chan *v3electionpb.CampaignResponse, 1)
	go func() {
		r, err := ec.Campaign(ctx, &v3electionpb.CampaignRequest{Name: []byte(name), Lease: int64(grant(t, ctx, cli)), Value: []byte("service")})
		if err != nil || !resigned.Load() {
			t.Errorf("v3election Campaign: %v (leading beside baton: %v)", err, !resigned.Load())
		}
		got <- r
	}()
	waitChildren(t, ctx, s, name, 2)
	r := statusOf(t, ctx, s, name)
	if r.Holders != 1 || r.Waiters != 1 || r.Entries[0].Role != layout.RoleLeader || r.Entries[0].Value != "baton" ||
		r.Entries[1].Role != layout.RoleCandidate || r.Entries[1].Value != "service" {
		t.Fatalf("status: %+v", r)
	}
	resigned.Store(true)
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	lead := <-got
	if lead == nil {
		t.FailNow()
	}
	if v, _, err := e.Leader(ctx); err != nil || string(v) != "service" {
		t.Fatalf("Leader: %q, %v", v, err)
	}
	won := make(chan error, 1)
	go func() { won <- e.Campaign(ctx, []byte("baton again")) }()
	waitChildren(t, ctx, s, name, 2)
	select {
	case err := <-won:
		t.Fatalf("Campaign returned %v while the service leads", err)
	default:
	}
	if _, err := ec.Resign(ctx, &v3electionpb.ResignRequest{Leader: lead.Leader}); err != nil {
		t.Fatal(err)
	}
	if err := <-won; err != nil {
		t.Fatal(err)
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestInteropEtcdRecipes: etcd's recipe Barrier is the name's own key, as
// ours is; its RWMutex, DoubleBarrier and Queue keep other layouts, which
// status flags on the name.
func TestInteropEtcdRecipes(t *testing.T) {
	ctx := testCtx(t)
	eps := server(t).Endpoints()
	s := openT(t, eps, etcd.WithTTL(10*time.Second))
	cli := rawClient(t, eps)
	cs, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	base := fmt.Sprintf("/interop/recipes-%d", time.Now().UnixNano())

	// Barrier: both directions.
	bname := base + "/barrier"
	eb := recipe.NewBarrier(cli, bname)
	if err := eb.Hold(); err != nil {
		t.Fatal(err)
	}
	b := baton.NewBarrier(s, bname)
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = b.Wait(wctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on etcd's held barrier: %v", err)
	}
	if r := statusOf(t, ctx, s, bname); !r.BarrierSet {
		t.Fatalf("status of etcd's barrier: %+v", r)
	}
	if err := eb.Release(); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	passed := make(chan error, 1)
	go func() { passed <- eb.Wait() }()
	select {
	case err := <-passed:
		t.Fatalf("etcd's Wait passed our set barrier: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-passed; err != nil {
		t.Fatal(err)
	}

	// RWMutex: flagged.
	rw := base + "/rw"
	if err := recipe.NewRWMutex(cs, rw).RLock(); err != nil {
		t.Fatal(err)
	}
	if r := statusOf(t, ctx, s, rw); !hasWarning(r, layout.WarnEtcdRWMutex) || r.Holders != 1 {
		t.Fatalf("status of etcd's RWMutex: %+v", r)
	}

	// DoubleBarrier: flagged while a participant waits for another.
	db := base + "/double"
	entered := make(chan error, 1)
	go func() { entered <- recipe.NewDoubleBarrier(cs, db, 2).Enter() }()
	var r layout.Report
	if !await.Within(10*time.Second, func() bool { r = statusOf(t, ctx, s, db); return r.Participants == 1 }) ||
		!hasWarning(r, layout.WarnEtcdDouble) {
		t.Fatalf("status of etcd's DoubleBarrier: %+v", r)
	}
	other, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	if err := recipe.NewDoubleBarrier(other, db, 2).Enter(); err != nil {
		t.Fatal(err)
	}
	if err := <-entered; err != nil {
		t.Fatal(err)
	}

	// Queue: flagged; etcd's takes ours too, ours ignores etcd's.
	qn := base + "/queue"
	if err := recipe.NewQueue(cli, qn).Enqueue("etcd"); err != nil {
		t.Fatal(err)
	}
	if err := baton.NewQueue(s, qn).Put(ctx, []byte("ours")); err != nil {
		t.Fatal(err)
	}
	if r := statusOf(t, ctx, s, qn); !hasWarning(r, layout.WarnEtcdQueue) || r.Items != 2 {
		t.Fatalf("status of the mixed queue: %+v", r)
	}
}

func hasWarning(r layout.Report, w string) bool {
	for _, x := range r.Warnings {
		if x == w {
			return true
		}
	}
	return false
}
