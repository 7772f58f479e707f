// Package etcdtest starts real etcd servers for tests: the embedded server
// (always available) on free loopback ports and a temp data dir.
package etcdtest

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/etcd/embedded"
)

// Start runs an embedded etcd with fast raft timings on free loopback
// ports and stops it when the test ends.
func Start(t testing.TB) *embedded.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := embedded.Start(ctx, embedded.Config{DataDir: t.TempDir(), Fast: true})
	if err != nil {
		t.Fatalf("start embedded etcd: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
