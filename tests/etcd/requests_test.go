package etcd_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/etcd"
)

// requestCounter counts the messages a client sends: unary calls, and the
// messages it sends on watch streams (each creates or cancels a watch).
// Lease keepalives are left out: they depend on time, not on acquisitions.
type requestCounter struct {
	unary, watch atomic.Int64
}

func (rc *requestCounter) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			rc.unary.Add(1)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			cs, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil || !strings.HasSuffix(method, "/Watch") {
				return cs, err
			}
			return &countedStream{ClientStream: cs, n: &rc.watch}, nil
		}),
	}
}

type countedStream struct {
	grpc.ClientStream
	n *atomic.Int64
}

func (s *countedStream) SendMsg(m any) error {
	s.n.Add(1)
	return s.ClientStream.SendMsg(m)
}

func (rc *requestCounter) total() int64 { return rc.unary.Load() + rc.watch.Load() }

// TestHolderWatchRequests pins what the holder's watch on its own node
// costs: a session that takes the same Mutex again sends no watch request
// at all (its one watch of the lock's directory is open already), and an
// acquisition costs the create and the delete of the node, as without the
// watch. Every round deletes the holder's node from outside, so the holder
// was watching: its lease ends with ErrRevoked.
func TestHolderWatchRequests(t *testing.T) {
	s := server(t)
	ctx := testCtx(t)
	var rc requestCounter
	cli, err := clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), DialTimeout: 5 * time.Second, DialOptions: rc.dialOptions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	sess := openT(t, nil, etcd.WithClient(cli), etcd.WithTTL(30*time.Second))
	admin := rawClient(t, s.Endpoints())
	const name = "holder-watch-requests"
	m := baton.NewMutex(sess, name)

	round := func() {
		t.Helper()
		l, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// An admin's delete of every key of the lock: the holder's node.
		if resp, err := admin.Delete(ctx, name+"/", clientv3.WithPrefix()); err != nil || resp.Deleted != 1 {
			t.Fatalf("delete the holder's node: %v (%d deleted)", err, resp.Deleted)
		}
		select {
		case <-l.Done():
		case <-ctx.Done():
			t.Fatal("the lease did not end when its node was deleted")
		}
		if !errors.Is(l.Err(), baton.ErrRevoked) {
			t.Fatalf("lease error %v, want ErrRevoked", l.Err())
		}
		if err := m.Unlock(ctx); !errors.Is(err, baton.ErrLost) {
			t.Fatalf("Unlock after the delete: %v, want ErrLost", err)
		}
	}
	// The first acquisition opens the session's watch of the directory.
	round()
	const rounds = 5
	unary, watch := rc.unary.Load(), rc.watch.Load()
	for range rounds {
		round()
	}
	if n := rc.watch.Load() - watch; n != 0 {
		t.Errorf("%d watch requests in %d acquisitions, want 0", n, rounds)
	}
	if n := rc.unary.Load() - unary; n != 2*rounds {
		t.Errorf("%d requests in %d acquisitions, want %d (create, delete)", n, rounds, 2*rounds)
	}
	t.Logf("%d requests in %d acquisitions", rc.total()-unary-watch, rounds)
}
