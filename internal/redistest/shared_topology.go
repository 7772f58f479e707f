package redistest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/freeport"
)

// binaryTB is the testing.TB a shared setup starts with: the test that
// first asks, for its failures and its Helper, but with cleanups and
// temporary directories of the test binary's own, released by StopShared.
type binaryTB struct {
	testing.TB
}

// Cleanup registers f with StopShared instead of the test.
func (binaryTB) Cleanup(f func()) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.cleanups = append(shared.cleanups, f)
}

// TempDir makes a directory that StopShared removes.
func (b binaryTB) TempDir() string {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		b.Fatalf("redistest: %v", err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// sharedSetup is one topology of the test binary, started once.
type sharedSetup[T any] struct {
	once sync.Once
	v    T
	ok   bool
}

// get starts the setup with start on first use; a setup that failed to
// start fails every test that asks for it (the first with its reason).
func (s *sharedSetup[T]) get(t testing.TB, what string, start func(t testing.TB) T) T {
	t.Helper()
	s.once.Do(func() {
		s.v = start(binaryTB{t})
		s.ok = true
	})
	if !s.ok {
		t.Fatalf("redistest: the shared %s did not start (see the first test that asked)", what)
	}
	return s.v
}

var sharedSentinel sharedSetup[*Topology]

// SharedSentinel returns one Sentinel topology (a master, a replica and
// three sentinels) for the whole test binary, started on first use and
// stopped by StopShared, which TestMain must call. Tests sharing it use
// names of their own, and must not kill, restart or fail over its servers.
func SharedSentinel(t testing.TB) *Topology {
	t.Helper()
	return sharedSentinel.get(t, "Sentinel topology", func(t testing.TB) *Topology { return StartSentinel(t, 1, 3) })
}

var sharedCluster sharedSetup[*Cluster]

// SharedCluster returns one Redis Cluster (three masters, a replica
// each) for the whole test binary, started on first use and stopped by
// StopShared, which TestMain must call. Tests sharing it use names of
// their own, and must not kill, restart or reshard its nodes.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	return sharedCluster.get(t, "Redis Cluster", func(t testing.TB) *Cluster { return StartCluster(t, 3, 1) })
}

// ViaName is the master name of the sentinel SentinelVia starts.
const ViaName = MasterName + "-via"

// SentinelVia starts one sentinel of t's own that announces the
// topology's master at addr (a proxy in front of it, say) as master
// ViaName, and returns its redis-sentinel:// URL: a client of that URL
// dials addr, while the topology's own sentinels go on naming the master
// itself. It never takes the master for down nor reconfigures a replica
// while a test runs (its down-after and failover timeouts are an hour),
// and its hellos name a master the topology's sentinels do not monitor,
// which they ignore: it changes nothing in the topology.
func (tp *Topology) SentinelVia(t testing.TB, addr string) string {
	t.Helper()
	if tp.tls.CA != "" {
		t.Fatalf("redistest: SentinelVia on a TLS topology")
	}
	host, port, ok := strings.Cut(addr, ":")
	if !ok {
		t.Fatalf("redistest: SentinelVia: address %q is not host:port", addr)
	}
	const never = time.Hour
	s := &Server{t: t, dir: t.TempDir(), cfg: Config{sentinel: true, Conf: []string{
		fmt.Sprintf("sentinel monitor %s %s %s 1", ViaName, host, port),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", ViaName, never.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", ViaName, never.Milliseconds()),
	}}}
	sbin := SentinelBinary(t)
	var err error
	for range 5 { // a free port may be taken between probe and bind
		if s.port, err = freeport.Port(); err != nil {
			continue
		}
		if err = s.start(sbin); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: sentinel: %v", err)
	}
	t.Cleanup(s.Kill)
	return "redis-sentinel://" + s.Addr() + "/" + ViaName
}
