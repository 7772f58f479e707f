package zk

import (
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/zktest"
)

var totalWatches = regexp.MustCompile(`Total watches:\s*(\d+)`)

// harness drives the conformance suite against the shared test server.
// Every session it opens goes through a TCP proxy of its own, so that one
// session can be partitioned without the others.
func harness(t *testing.T) batontest.Harness {
	srv := zktest.Shared(t)
	return harnessOn(t, "zk", srv, srv.Addr())
}

// harnessOn is harness on srv, every session dialing addr (through its
// proxy) with opts.
func harnessOn(t *testing.T, name string, srv *zktest.Server, addr string, opts ...Option) batontest.Harness {
	var mu sync.Mutex
	proxies := map[*baton.Session]*proxy.Proxy{}
	droppers := map[*baton.Session]*replyDropper{}
	proxyOf := func(t testing.TB, s *baton.Session) *proxy.Proxy {
		mu.Lock()
		defer mu.Unlock()
		p := proxies[s]
		if p == nil {
			t.Fatal("session not opened by the harness")
		}
		return p
	}
	return batontest.Harness{
		Name:     name,
		Parallel: true,
		Open: func(t testing.TB, ttl time.Duration) *baton.Session {
			p := proxy.Start(t, addr)
			d := &replyDropper{}
			s := openAt(t, p.Addr(), ttl, append([]Option{withDropper(d)}, opts...)...)
			mu.Lock()
			proxies[s], droppers[s] = p, d
			mu.Unlock()
			return s
		},
		Path:   testPath,
		Expire: func(t testing.TB, s *baton.Session) { expire(t, srv.Addr(), proxyOf(t, s), s) },
		Partition: func(t testing.TB, s *baton.Session) func() {
			p := proxyOf(t, s)
			p.Blackhole()
			return p.Heal
		},
		DropCreateReply: func(t testing.TB, s *baton.Session) {
			mu.Lock()
			d := droppers[s]
			mu.Unlock()
			if d == nil {
				t.Fatal("session not opened by the harness")
			}
			d.dropNext()
		},
		PendingWatches: func(t testing.TB) int {
			out, err := srv.FourLetter("wchs")
			if err != nil {
				t.Fatalf("wchs: %v", err)
			}
			m := totalWatches.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("wchs: unexpected answer %q", out)
			}
			n, _ := strconv.Atoi(m[1])
			return n
		},
	}
}

// The two conformance suites (here, and on a secure server) run beside
// each other and the package's other parallel tests, each on a server of
// its own: the herd tests count the watches of the whole server.
func TestConformance(t *testing.T) {
	t.Parallel()
	srv := zktest.Start(t)
	batontest.Run(t, harnessOn(t, "zk", srv, srv.Addr()))
}

func TestConn(t *testing.T) {
	batontest.RunConn(t, harness(t))
}

func TestLocker(t *testing.T) {
	h := harness(t)
	batontest.RunLocker(t, batontest.MutexLockers(h, false))
	t.Run("Reentrant", func(t *testing.T) { batontest.RunLocker(t, batontest.MutexLockers(h, true, baton.Reentrant())) })
}
