package embedded

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/await"
)

// churn writes n lock-like revisions: a key created and deleted, with a
// value of size bytes, as acquisitions and releases do.
func churn(ctx context.Context, t *testing.T, cli *clientv3.Client, n, size int) error {
	t.Helper()
	v := strings.Repeat("x", size)
	for i := range n {
		k := fmt.Sprintf("/lock/%d", i%8)
		if _, err := cli.Put(ctx, k, v); err != nil {
			return err
		}
		if _, err := cli.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

func startServer(t *testing.T, ctx context.Context, cfg Config) (*Server, *clientv3.Client) {
	t.Helper()
	cfg.DataDir, cfg.Fast = t.TempDir(), true
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cli, err := clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return s, cli
}

// TestMaintenanceBoundsBackend: under lock-like churn a server with
// maintenance compacts its history and defragments, and its backend ends
// a fraction of the size of one without (which keeps every revision).
func TestMaintenanceBoundsBackend(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const n, size = 2000, 2048 // 8 MB of history
	plain, plainCli := startServer(t, ctx, Config{})
	kept, keptCli := startServer(t, ctx, Config{CompactEvery: 100 * time.Millisecond})
	if err := churn(ctx, t, plainCli, n, size); err != nil {
		t.Fatal(err)
	}
	if err := churn(ctx, t, keptCli, n, size); err != nil {
		t.Fatal(err)
	}
	end := kept.etcd.Server.KV().Rev()
	// Two rounds after the churn compact up to its end.
	if !await.Within(30*time.Second, func() bool { return kept.Maintenance().CompactedRev >= end }) {
		t.Fatalf("maintenance did not compact to %d in time: %+v", end, kept.Maintenance())
	}
	st := kept.Maintenance()
	plainSize := plain.etcd.Server.Backend().Size()
	t.Logf("backend after %d revisions of %d bytes: %d bytes without maintenance, %d with (%+v)", 2*n, size, plainSize, st.Size, st)
	if plainSize < n*size {
		t.Errorf("without maintenance the backend is %d bytes, under the %d written: the test does not show growth", plainSize, n*size)
	}
	if st.Size > 2<<20 {
		t.Errorf("with maintenance the backend is %d bytes, want under 2 MiB", st.Size)
	}
	if _, err := keptCli.Get(ctx, "/lock/0", clientv3.WithRev(end-10)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("read at a revision before the compaction: %v, want %v", err, rpctypes.ErrCompacted)
	}
}

// TestNoSpaceAlarmDisarmed: a server whose history filled its quota
// raises etcd's NOSPACE alarm and refuses writes (new leases, puts) with
// "database space exceeded"; a maintenance round compacts, defragments
// and disarms the alarm, and writes work again.
func TestNoSpaceAlarmDisarmed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const quota = 2 << 20
	s, cli := startServer(t, ctx, Config{QuotaBackendBytes: quota})
	err := churn(ctx, t, cli, 4*quota/4096, 4096)
	if !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("writing twice the quota: %v, want %v", err, rpctypes.ErrNoSpace)
	}
	if _, err := cli.Grant(ctx, 5); !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("lease grant with the alarm raised: %v, want %v", err, rpctypes.ErrNoSpace)
	}
	e := s.etcd
	s.maintainOnce(ctx, e, e.Server.KV().Rev())
	st := s.Maintenance()
	t.Logf("after one round: %+v", st)
	if st.Disarms != 1 || st.Defrags != 1 {
		t.Fatalf("round did not defragment and disarm: %+v", st)
	}
	if _, err := cli.Grant(ctx, 5); err != nil {
		t.Fatalf("lease grant after the round: %v", err)
	}
	if _, err := cli.Put(ctx, "/after", "ok"); err != nil {
		t.Fatalf("put after the round: %v", err)
	}
}

// TestNoSpaceAlarmDisarmedWithoutClients: with the alarm raised and no
// client writing, so that nothing commits and etcd's measure of the space
// in use stays where it was before the compaction, maintenance rounds
// every 100 ms still disarm the alarm: the first finds the revision, the
// second compacts to it, defragments and disarms. Before, the rounds saw
// no free space and left the alarm raised for good.
func TestNoSpaceAlarmDisarmedWithoutClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const quota = 2 << 20
	s, cli := startServer(t, ctx, Config{QuotaBackendBytes: quota})
	v := strings.Repeat("x", 4096)
	for i := 0; ; i++ {
		if i == 4*quota/len(v) {
			t.Fatal("the quota never filled")
		}
		_, err := cli.Put(ctx, "/fill", v)
		if errors.Is(err, rpctypes.ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// The rounds serve runs after a restart with maintenance on.
	s.cfg.CompactEvery = 100 * time.Millisecond
	mctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go s.maintain(mctx, s.etcd, done)
	defer func() { stop(); <-done }()
	// Two rounds are enough; ten times that bounds the wait.
	for st := s.Maintenance(); st.Disarms == 0; st = s.Maintenance() {
		if st.Rounds >= 20 {
			t.Fatalf("%d rounds without clients did not disarm the alarm: %+v", st.Rounds, st)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(20 * time.Millisecond): // poll interval
		}
	}
	t.Logf("disarmed: %+v", s.Maintenance())
	if _, err := cli.Put(ctx, "/after", "ok"); err != nil {
		t.Fatalf("put after the rounds: %v", err)
	}
}
