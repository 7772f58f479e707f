package etcdtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/testenv"
)

// DebianEtcd is where Debian's etcd-server package installs the server.
const DebianEtcd = "/usr/bin/etcd"

// Binary is an etcd server run from an executable (e.g. Debian's 3.4).
type Binary struct {
	cmd    *exec.Cmd
	addr   string
	dir    string
	out    *lockedBuffer
	waited chan struct{}
}

// StartBinary runs the etcd executable at path on free loopback ports with
// a temp data dir and stops it when the test ends. Without the executable
// the test fails under CI and is skipped otherwise.
func StartBinary(t testing.TB, path string) *Binary {
	t.Helper()
	_, err := os.Stat(path)
	testenv.Require(t, "etcd executable (install etcd-server)", err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := StartExecutable(ctx, path, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// StartExecutable runs the etcd executable at path with data in dir on
// free loopback ports (fast raft timings), and returns once it serves.
func StartExecutable(ctx context.Context, path, dir string) (*Binary, error) {
	client, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	peer, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	cu, pu := "http://"+client, "http://"+peer
	b := &Binary{addr: client, dir: dir, out: &lockedBuffer{}, waited: make(chan struct{})}
	b.cmd = exec.Command(path,
		"--name", "baton",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", cu, "--advertise-client-urls", cu,
		"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu,
		"--initial-cluster", "baton="+pu,
		"--heartbeat-interval", "10", "--election-timeout", "100",
		"--log-level", "error", "--logger", "zap",
	)
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("etcdtest: start %s: %w", path, err)
	}
	go func() { _ = b.cmd.Wait(); close(b.waited) }()
	if err := b.waitReady(ctx); err != nil {
		b.Stop()
		return nil, fmt.Errorf("etcdtest: %s not ready: %w; output:\n%s", path, err, b.out.String())
	}
	return b, nil
}

func (b *Binary) waitReady(ctx context.Context) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: b.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	for i := 0; ; i++ {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := cli.Get(rctx, "health")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-b.waited:
			return fmt.Errorf("exited")
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Endpoints are the client URLs to dial.
func (b *Binary) Endpoints() []string { return []string{"http://" + b.addr} }

// Addr is the client host:port.
func (b *Binary) Addr() string { return b.addr }

// Version is the server's version as it reports it.
func (b *Binary) Version(ctx context.Context) (string, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: b.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", err
	}
	defer cli.Close()
	st, err := cli.Status(ctx, b.Endpoints()[0])
	if err != nil {
		return "", err
	}
	return st.Version, nil
}

// Stop kills the server and waits for it to exit.
func (b *Binary) Stop() {
	if b.cmd.Process != nil {
		_ = b.cmd.Process.Kill()
	}
	<-b.waited
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
