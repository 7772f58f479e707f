package etcd_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/etcd"
)

// pqName is a fresh priority queue name for one test.
func pqName(what string) string {
	return fmt.Sprintf("/interop/pq-%s-%d", what, time.Now().UnixNano())
}

// pqLeft returns the keys left under a priority queue: its items
// (NAME/…) and its claims (NAME.claims/…).
func pqLeft(t *testing.T, cli *clientv3.Client, name string) []string {
	t.Helper()
	var left []string
	for _, pfx := range []string{name + "/", name + ".claims/"} {
		resp, err := cli.Get(testCtx(t), pfx, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			left = append(left, string(kv.Key))
		}
	}
	return left
}

// baton's PriorityQueue and etcd's recipe.PriorityQueue on one name are
// one queue: the items either puts are in etcd's layout
// (NAME/<priority %05d>/<seq %016d>, the seq counting on across both), and
// taking in turns from either side delivers them all once, lowest
// priority first and in the order put among equals; in every spelling of
// the name.
func TestInteropRecipesPriorityQueueOrder(t *testing.T) {
	cli := rawClient(t, server(t).Endpoints())
	s := openT(t, server(t).Endpoints())
	for _, name := range spellings("pq-order") {
		t.Run(subName(name), func(t *testing.T) { pqOrder(t, cli, s, name) })
	}
}

func pqOrder(t *testing.T, cli *clientv3.Client, s *baton.Session, name string) {
	ctx := testCtx(t)
	eq := recipe.NewPriorityQueue(cli, name)
	bq := baton.NewPriorityQueue(s, name)
	puts := []struct {
		by   string
		v    string
		p    int32
		want string // the key it gets
	}{
		{"etcd", "e3a", 3, "00003/0000000000000000"},
		{"baton", "b1a", 1, "00001/0000000000000000"},
		{"etcd", "e1", 1, "00001/0000000000000001"},
		{"baton", "b3", 3, "00003/0000000000000001"},
		{"etcd", "e0", 0, "00000/0000000000000000"},
		{"baton", "b0", 0, "00000/0000000000000001"},
		{"baton", "b1b", 1, "00001/0000000000000002"},
		{"etcd", "e2", 2, "00002/0000000000000000"},
		{"baton", "bmax", 99999, "99999/0000000000000000"},
		{"etcd", "e65535", 65535, "65535/0000000000000000"},
	}
	for _, x := range puts {
		var err error
		if x.by == "etcd" {
			err = eq.Enqueue(x.v, uint16(x.p))
		} else {
			err = bq.Put(ctx, []byte(x.v), x.p)
		}
		if err != nil {
			t.Fatalf("%s put %s: %v", x.by, x.v, err)
		}
		resp, err := cli.Get(ctx, name+"/"+x.want)
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != x.v {
			t.Fatalf("%s put %s: key %s/%s: %v %v", x.by, x.v, name, x.want, resp, err)
		}
	}
	if n, err := bq.Len(ctx); err != nil || n != len(puts) {
		t.Fatalf("Len %d %v, want %d", n, err, len(puts))
	}
	want := []string{"e0", "b0", "b1a", "e1", "b1b", "e2", "e3a", "b3", "e65535", "bmax"}
	var got []string
	for i := range want {
		var v string
		switch i % 4 {
		case 0, 2:
			s, err := eq.Dequeue()
			if err != nil {
				t.Fatalf("etcd Dequeue: %v", err)
			}
			v = s
		case 1:
			b, err := bq.Take(ctx)
			if err != nil {
				t.Fatalf("baton Take: %v", err)
			}
			v = string(b)
		default:
			it, err := bq.Claim(ctx)
			if err != nil {
				t.Fatalf("baton Claim: %v", err)
			}
			if err := bq.Ack(ctx, it); err != nil {
				t.Fatalf("baton Ack: %v", err)
			}
			v = string(it.Data)
		}
		got = append(got, v)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("order %v, want %v", got, want)
	}
	if _, err := bq.Poll(ctx); !errors.Is(err, baton.ErrEmpty) {
		t.Fatalf("Poll after all: %v, want ErrEmpty", err)
	}
	if left := pqLeft(t, cli, name); len(left) != 0 {
		t.Fatalf("keys left: %v", left)
	}
	// The other spelling is another queue: empty.
	if n, err := baton.NewPriorityQueue(s, otherSpelling(name)).Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len of %q: %d, %v; want an empty queue of its own", otherSpelling(name), n, err)
	}
}

// Both directions at once: baton and etcd producers put, baton consumers
// (one taking, one claiming and acknowledging) and etcd's Dequeue take,
// all concurrently; every item is delivered exactly once. etcd's Dequeue
// does not know baton's claims, so it may take an item a baton consumer
// has claimed: that consumer's Ack then fails (ErrRevoked) and it claims
// another, and Take does so by itself. In every spelling of the name.
func TestInteropRecipesPriorityQueueConcurrent(t *testing.T) {
	for _, name := range spellings("pq-concurrent") {
		t.Run(subName(name), func(t *testing.T) { pqConcurrent(t, name) })
	}
}

func pqConcurrent(t *testing.T, name string) {
	ctx := testCtx(t)
	eps := server(t).Endpoints()
	const per = 20 // items per producer
	const producers = 3
	const total = producers * per
	// Every consumer call takes one ticket and must get one item: etcd's
	// Dequeue cannot be cancelled, so none is made without an item for it.
	var tickets atomic.Int64
	tickets.Store(total)
	var mu sync.Mutex
	seen := map[string][]string{}
	got := func(by, v string) {
		mu.Lock()
		seen[v] = append(seen[v], by)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	// Producers: two baton sessions, one etcd client.
	for i := range producers {
		wg.Add(1)
		if i == 0 {
			eq := recipe.NewPriorityQueue(rawClient(t, eps), name)
			go func() {
				defer wg.Done()
				for j := range per {
					if err := eq.Enqueue(fmt.Sprintf("e-%d", j), uint16(j%4)); err != nil {
						errc <- fmt.Errorf("etcd Enqueue: %w", err)
						return
					}
				}
			}()
			continue
		}
		bq := baton.NewPriorityQueue(openT(t, eps), name)
		go func() {
			defer wg.Done()
			for j := range per {
				if err := bq.Put(ctx, []byte(fmt.Sprintf("b%d-%d", i, j)), int32(j%4)); err != nil {
					errc <- fmt.Errorf("baton Put: %w", err)
					return
				}
			}
		}()
	}
	// Consumers: two etcd clients, a baton taker and a baton claimer.
	for i := range 2 {
		eq := recipe.NewPriorityQueue(rawClient(t, eps), name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tickets.Add(-1) >= 0 {
				v, err := eq.Dequeue()
				if err != nil {
					errc <- fmt.Errorf("etcd Dequeue: %w", err)
					return
				}
				got(fmt.Sprintf("etcd%d", i), v)
			}
		}()
	}
	taker := baton.NewPriorityQueue(openT(t, eps), name)
	claimer := baton.NewPriorityQueue(openT(t, eps), name)
	var revoked atomic.Int64
	wg.Add(2)
	go func() {
		defer wg.Done()
		for tickets.Add(-1) >= 0 {
			v, err := taker.Take(ctx)
			if err != nil {
				errc <- fmt.Errorf("baton Take: %w", err)
				return
			}
			got("take", string(v))
		}
	}()
	go func() {
		defer wg.Done()
		for tickets.Add(-1) >= 0 {
			for {
				it, err := claimer.Claim(ctx)
				if err != nil {
					errc <- fmt.Errorf("baton Claim: %w", err)
					return
				}
				err = claimer.Ack(ctx, it)
				if errors.Is(err, baton.ErrRevoked) && errors.Is(err, baton.ErrLost) {
					revoked.Add(1) // delivered to an etcd consumer instead
					continue
				}
				if err != nil {
					errc <- fmt.Errorf("baton Ack: %w", err)
					return
				}
				got("claim", string(it.Data))
				break
			}
		}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case err := <-errc:
		t.Fatal(err)
	case <-ctx.Done():
		mu.Lock()
		t.Fatalf("%d of %d items delivered before the deadline", len(seen), total)
	}
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	by := map[string]int{}
	for v, who := range seen {
		if len(who) != 1 {
			t.Errorf("%s delivered %d times: %v", v, len(who), who)
		}
		by[who[0]]++
	}
	if len(seen) != total {
		t.Fatalf("%d distinct items delivered, want %d", len(seen), total)
	}
	t.Logf("delivered by %v; %d claims lost to etcd's Dequeue", by, revoked.Load())
	if left := pqLeft(t, rawClient(t, eps), name); len(left) != 0 {
		t.Fatalf("keys left: %v", left)
	}
}

// Items an older baton put on etcd, NAME/pq-<priority>-<id> (any int32
// priority), are still delivered after an upgrade, merged by priority with
// the items in etcd's layout, and counted by Len; nothing new is written
// in the old form.
func TestPriorityQueueOldItemsDelivered(t *testing.T) {
	ctx := testCtx(t)
	name := pqName("old")
	cli := rawClient(t, server(t).Endpoints())
	bq := baton.NewPriorityQueue(openT(t, server(t).Endpoints()), name)
	old := func(p int, v string) {
		id := uuid.New()
		if _, err := cli.Put(ctx, fmt.Sprintf("%s/pq-%d-%s", name, p, hex.EncodeToString(id[:])), v); err != nil {
			t.Fatal(err)
		}
	}
	old(5, "old5")
	if err := bq.Put(ctx, []byte("new7"), 7); err != nil {
		t.Fatal(err)
	}
	old(-3, "old-3")
	if err := bq.Put(ctx, []byte("new5"), 5); err != nil {
		t.Fatal(err)
	}
	old(1<<20, "old-big")
	if err := bq.Put(ctx, []byte("new0"), 0); err != nil {
		t.Fatal(err)
	}
	if n, err := bq.Len(ctx); err != nil || n != 6 {
		t.Fatalf("Len %d %v, want 6", n, err)
	}
	resp, err := cli.Get(ctx, name+"/pq-", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 3 {
		t.Fatalf("old-form keys: %v %v, want the 3 put so", resp, err)
	}
	var got []string
	for range 6 {
		it, err := bq.Claim(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := bq.Ack(ctx, it); err != nil {
			t.Fatal(err)
		}
		got = append(got, string(it.Data))
	}
	if want := "old-3,new0,old5,new5,new7,old-big"; strings.Join(got, ",") != want {
		t.Fatalf("order %v, want %s", got, want)
	}
	if left := pqLeft(t, cli, name); len(left) != 0 {
		t.Fatalf("keys left: %v", left)
	}
}

// A priority outside etcd's layout (0 to 99999) is refused, and puts
// nothing.
func TestPriorityQueueRange(t *testing.T) {
	ctx := testCtx(t)
	name := pqName("range")
	bq := baton.NewPriorityQueue(openT(t, server(t).Endpoints()), name)
	for _, p := range []int32{-1, 100000, -1 << 31, 1<<31 - 1} {
		if err := bq.Put(ctx, []byte("x"), p); !errors.Is(err, baton.ErrInvalidPriority) || !strings.Contains(err.Error(), "0 to 99999") {
			t.Fatalf("Put priority %d: %v, want ErrInvalidPriority naming 0 to 99999", p, err)
		}
	}
	if left := pqLeft(t, rawClient(t, server(t).Endpoints()), name); len(left) != 0 {
		t.Fatalf("keys left: %v", left)
	}
}

// txnFault makes the next Txn that puts under prefix fail as a lost
// connection would: with applied, after the server has applied it (its
// reply lost); without, before it is sent.
type txnFault struct {
	mu      sync.Mutex
	prefix  string
	armed   bool
	applied bool
	fired   int
}

func (f *txnFault) arm(prefix string, applied bool) {
	f.mu.Lock()
	f.prefix, f.armed, f.applied = prefix, true, applied
	f.mu.Unlock()
}

func (f *txnFault) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	tr, ok := req.(*etcdserverpb.TxnRequest)
	if !ok || method != "/etcdserverpb.KV/Txn" {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	f.mu.Lock()
	fire := false
	if f.armed {
		for _, op := range tr.Success {
			if p := op.GetRequestPut(); p != nil && strings.HasPrefix(string(p.Key), f.prefix) {
				fire = true
			}
		}
	}
	if fire {
		f.armed = false
		f.fired++
	}
	applied := f.applied
	f.mu.Unlock()
	if !fire {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	if applied {
		if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
			return err
		}
	}
	return status.Error(codes.Unavailable, "etcd test: connection lost")
}

// A Put whose Txn's outcome is unknown (the reply lost after the server
// applied it, or the request lost before) puts the item exactly once: the
// try's id in the base key tells whether it was applied, and if it was
// not, writing the base key makes sure it never will be before trying
// again.
func TestPriorityQueuePutOutcomeUnknown(t *testing.T) {
	for _, applied := range []bool{true, false} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			ctx := testCtx(t)
			name := pqName("lost")
			f := &txnFault{}
			cli, err := clientv3.New(clientv3.Config{Endpoints: server(t).Endpoints(), DialTimeout: 5 * time.Second,
				Logger: zap.NewNop(), DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(f.intercept)}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cli.Close() })
			bq := baton.NewPriorityQueue(openT(t, nil, etcd.WithClient(cli), etcd.WithTTL(testTTL)), name)
			if err := bq.Put(ctx, []byte("first"), 4); err != nil {
				t.Fatal(err)
			}
			f.arm(name+"/", applied)
			if err := bq.Put(ctx, []byte("second"), 4); err != nil {
				t.Fatalf("Put across the fault: %v", err)
			}
			if f.fired != 1 {
				t.Fatalf("fault fired %d times, want 1", f.fired)
			}
			raw := rawClient(t, server(t).Endpoints())
			resp, err := raw.Get(ctx, name+"/", clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, kv := range resp.Kvs {
				got = append(got, strings.TrimPrefix(string(kv.Key), name+"/")+"="+string(kv.Value))
			}
			if want := "00004/0000000000000000=first,00004/0000000000000001=second"; strings.Join(got, ",") != want {
				t.Fatalf("items %v, want %s", got, want)
			}
		})
	}
}
