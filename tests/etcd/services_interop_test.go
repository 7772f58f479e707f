package etcd_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
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

// The v3lock service (gRPC, and its HTTP gateway as curl would use it)
// and baton's Mutex given the same name contend on one lock, in every
// spelling of the name; the other spelling is another lock.
func TestInteropLockService(t *testing.T) {
	eps := server(t).Endpoints()
	s := openT(t, eps, etcd.WithTTL(10*time.Second))
	cli := rawClient(t, eps)
	for _, name := range spellings("v3lock") {
		t.Run(subName(name), func(t *testing.T) { lockService(t, eps, s, cli, name) })
	}
}

func lockService(t *testing.T, eps []string, s *baton.Session, cli *clientv3.Client, name string) {
	ctx := testCtx(t)
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
	o := baton.NewMutex(s, otherSpelling(name))
	if _, err := o.TryLock(ctx); err != nil {
		t.Fatalf("TryLock on %q under the gateway's lock on %q: %v, want another lock", o.Name(), name, err)
	}
	if err := o.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	post("/v3/lock/unlock", map[string]any{"key": out["key"]})
	if _, err := m.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after the gateway's unlock: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// The v3election service and baton's Election given the same name are one
// election, in every spelling of the name.
func TestInteropElectionService(t *testing.T) {
	eps := server(t).Endpoints()
	s := openT(t, eps, etcd.WithTTL(10*time.Second))
	cli := rawClient(t, eps)
	for _, name := range spellings("v3election") {
		t.Run(subName(name), func(t *testing.T) { electionService(t, s, cli, name) })
	}
}

func electionService(t *testing.T, s *baton.Session, cli *clientv3.Client, name string) {
	ctx := testCtx(t)
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

	// Barrier: both directions, in every spelling.
	for _, bname := range spellings("barrier") {
		t.Run("Barrier/"+subName(bname), func(t *testing.T) { recipeBarrier(t, s, cli, bname) })
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

// recipeBarrier: etcd's recipe Barrier held keeps baton's Wait waiting
// until released, and baton's set barrier keeps etcd's Wait waiting until
// removed; the other spelling is another barrier.
func recipeBarrier(t *testing.T, s *baton.Session, cli *clientv3.Client, bname string) {
	ctx := testCtx(t)
	eb := recipe.NewBarrier(cli, bname)
	if err := eb.Hold(); err != nil {
		t.Fatal(err)
	}
	b := baton.NewBarrier(s, bname)
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := b.Wait(wctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on etcd's held barrier: %v", err)
	}
	if r := statusOf(t, ctx, s, bname); !r.BarrierSet {
		t.Fatalf("status of etcd's barrier: %+v", r)
	}
	if err := baton.NewBarrier(s, otherSpelling(bname)).Wait(ctx); err != nil {
		t.Fatalf("Wait on %q while etcd holds %q: %v, want another barrier (not set)", otherSpelling(bname), bname, err)
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
	case <-time.After(200 * time.Millisecond): // the width of the check: etcd's Wait takes no ctx
	}
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-passed; err != nil {
		t.Fatal(err)
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

// etcd's concurrency package (Mutex and Election, what a Go service on
// etcd already uses) and baton's recipes given the same name are one lock
// and one election, in every spelling of the name: a holder or leader on
// either side keeps the other out, and lock cycles from both sides never
// overlap. The other spelling is another lock.
func TestInteropConcurrency(t *testing.T) {
	eps := server(t).Endpoints()
	cli := rawClient(t, eps)
	s := openT(t, eps, etcd.WithTTL(10*time.Second))
	cs, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	for _, name := range spellings("concurrency") {
		t.Run("Mutex/"+subName(name), func(t *testing.T) { concurrencyMutex(t, eps, s, cs, name) })
		t.Run("Election/"+subName(name), func(t *testing.T) { concurrencyElection(t, s, cs, name) })
	}
}

func concurrencyMutex(t *testing.T, eps []string, s *baton.Session, cs *concurrency.Session, name string) {
	ctx := testCtx(t)
	cm := concurrency.NewMutex(cs, name)
	if err := cm.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cm.Key(), name+"/") {
		t.Fatalf("concurrency's key %q is not under %q", cm.Key(), name)
	}
	m := baton.NewMutex(s, name)
	if _, err := m.TryLock(ctx); !errors.Is(err, baton.ErrLocked) {
		t.Fatalf("TryLock while concurrency.Mutex holds: %v, want ErrLocked", err)
	}
	o := baton.NewMutex(s, otherSpelling(name))
	if _, err := o.TryLock(ctx); err != nil {
		t.Fatalf("TryLock on %q while concurrency.Mutex holds %q: %v, want another lock", o.Name(), name, err)
	}
	if err := o.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cm.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cm.TryLock(ctx); !errors.Is(err, concurrency.ErrLocked) {
		t.Fatalf("concurrency TryLock while baton holds: %v, want ErrLocked", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Cycles from both sides at once: no two critical sections overlap.
	var chk batontest.Checker
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	const cycles = 5
	for i := range 4 {
		wg.Add(1)
		var lock, unlock func() error
		if i%2 == 0 {
			bm := baton.NewMutex(openT(t, eps, etcd.WithTTL(10*time.Second)), name)
			lock = func() error { _, err := bm.Lock(ctx); return err }
			unlock = func() error { return bm.Unlock(ctx) }
		} else {
			ocs, err := concurrency.NewSession(rawClient(t, eps), concurrency.WithTTL(10))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ocs.Close() })
			em := concurrency.NewMutex(ocs, name)
			lock = func() error { return em.Lock(ctx) }
			unlock = func() error { return em.Unlock(ctx) }
		}
		go func() {
			defer wg.Done()
			for range cycles {
				if err := lock(); err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
				sp := chk.Enter(i, 0)
				batontest.Hold(nil)
				chk.Leave(sp)
				if err := unlock(); err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := chk.Verify(false); err != nil {
		t.Fatal(err)
	}
	if n := len(chk.Spans()); n != 4*cycles {
		t.Fatalf("%d critical sections, want %d", n, 4*cycles)
	}
}

func concurrencyElection(t *testing.T, s *baton.Session, cs *concurrency.Session, name string) {
	ctx := testCtx(t)
	ce := concurrency.NewElection(cs, name)
	if err := ce.Campaign(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	e := baton.NewElection(s, name)
	if v, _, err := e.Leader(ctx); err != nil || string(v) != "go" {
		t.Fatalf("Leader: %q, %v; want concurrency's value", v, err)
	}
	if v, _, err := baton.NewElection(s, otherSpelling(name)).Leader(ctx); !errors.Is(err, baton.ErrNoLeader) {
		t.Fatalf("Leader of %q: %q, %v; want ErrNoLeader (another election)", otherSpelling(name), v, err)
	}
	won := make(chan error, 1)
	go func() { won <- e.Campaign(ctx, []byte("baton")) }()
	waitChildren(t, ctx, s, name, 2)
	select {
	case err := <-won:
		t.Fatalf("Campaign returned %v while concurrency's candidate leads", err)
	default:
	}
	if err := ce.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-won; err != nil {
		t.Fatal(err)
	}
	if r, err := ce.Leader(ctx); err != nil || string(r.Kvs[0].Value) != "baton" {
		t.Fatalf("concurrency's Leader after it resigned: %v, %v; want baton's value", r, err)
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
