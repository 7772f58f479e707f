package main

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// startServe runs `baton serve` on a free port with extra flags and
// returns it with its client address once it serves.
func startServe(t *testing.T, dir string, extra ...string) (*proc, string) {
	t.Helper()
	p := start(t, env(), append([]string{"serve", "--data-dir", dir, "--listen", "127.0.0.1:0"}, extra...)...)
	p.waitOutput("Ctrl-C stops\n", 60*time.Second)
	m := regexp.MustCompile(`etcd serving on (127\.0\.0\.1:\d+) `).FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("serve printed %q", p.stdout.String())
	}
	return p, m[1]
}

// stopServe stops serve with SIGTERM and checks it exits 0.
func stopServe(t *testing.T, p *proc) {
	t.Helper()
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Errorf("serve exit %d: %q", code, p.stderr.String())
	}
}

// TestServeQuotaAlarm: what a user sees when `baton serve`'s space quota
// fills (here with --compaction-interval 0, no maintenance, and history
// written until etcd raises its NOSPACE alarm): `baton lock` fails at once
// in one line that names the alarm and the way out. The way out taken:
// serve restarted on the same data dir with maintenance on compacts,
// defragments and disarms the alarm by itself, and the lock is taken.
func TestServeQuotaAlarm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, addr := startServe(t, dir, "--quota-backend-bytes", "2MiB", "--compaction-interval", "0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	v := strings.Repeat("x", 4096)
	for i := 0; ; i++ {
		if i == 2000 { // 8 MB: four times the quota
			t.Fatal("the quota never filled")
		}
		if _, err := cli.Put(ctx, "/fill", v); errors.Is(err, rpctypes.ErrNoSpace) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, code := run(t, env(), "lock", "--store", "etcd://"+addr, "/quota", "--", "echo", "held")
	checkOneLine(t, "lock with the alarm raised", stderr, code,
		"space quota is full (etcd's NOSPACE alarm) and it refuses writes; compact its history, defragment it and disarm the alarm")
	if !strings.Contains(stderr, "--quota-backend-bytes") {
		t.Errorf("stderr %q does not name --quota-backend-bytes", stderr)
	}
	t.Logf("with the alarm raised: %s", strings.TrimSpace(stderr))
	_ = cli.Close()
	stopServe(t, srv)

	srv, addr = startServe(t, dir, "--quota-backend-bytes", "2MiB", "--compaction-interval", "100ms")
	defer stopServe(t, srv)
	// The alarm is disarmed after two rounds (the first finds the
	// revision to compact to); until then lock keeps failing.
	deadline := time.Now().Add(30 * time.Second)
	for {
		stdout, stderr, code := run(t, env(), "lock", "--store", "etcd://"+addr, "/quota", "--", "echo", "held")
		if code == 0 && stdout == "held\n" {
			break
		}
		if !strings.Contains(stderr, "NOSPACE") || time.Now().After(deadline) {
			t.Fatalf("lock after restarting with maintenance: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	}
}
