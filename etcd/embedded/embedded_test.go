package embedded_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/etcd/embedded"
)

func TestStartRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	s, err := embedded.Start(ctx, embedded.Config{DataDir: t.TempDir(), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	t.Logf("ready in %v at %v", time.Since(start), s.Endpoints())
	cli, err := clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Addr() != addr {
		t.Fatalf("address changed on restart: %s -> %s", addr, s.Addr())
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after restart got %v", resp.Kvs)
	}
}

// A new server on an old data dir (as `baton serve` started again, on new
// free ports) resumes its data.
func TestReopenDataDir(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	s, err := embedded.Start(ctx, embedded.Config{DataDir: dir, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	_ = cli.Close()
	_ = s.Close()

	s2, err := embedded.Start(ctx, embedded.Config{DataDir: dir, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	cli2, err := clientv3.New(clientv3.Config{Endpoints: s2.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli2.Close()
	resp, err := cli2.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after reopening got %v", resp.Kvs)
	}
}
