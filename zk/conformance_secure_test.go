package zk

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
	"github.com/batonhq/baton/internal/proxy"
	"github.com/batonhq/baton/internal/testca"
	"github.com/batonhq/baton/internal/zktest"
)

// TestConformanceSecure runs the whole conformance suite with every
// session over TLS (client certificates required), authenticated with one
// digest identity and creating nodes with CreatorACL.
func TestConformanceSecure(t *testing.T) {
	ca := testca.New(t, "baton conformance CA")
	cert := ca.Issue(t, "zookeeper")
	srv := zktest.Start(t, zktest.WithTLS(zktest.TLS{Cert: cert.CertFile, Key: cert.KeyFile, CA: ca.CertFile, ClientAuth: "need"}))
	client := ca.Issue(t, "baton")
	cfg := clientTLS(t, ca.CertFile, &client)

	var mu sync.Mutex
	proxies := map[*baton.Session]*proxy.Proxy{}
	proxyOf := func(t testing.TB, s *baton.Session) *proxy.Proxy {
		mu.Lock()
		defer mu.Unlock()
		p := proxies[s]
		if p == nil {
			t.Fatal("session not opened by the harness")
		}
		return p
	}
	batontest.Run(t, batontest.Harness{
		Name: "zk-secure",
		Open: func(t testing.TB, ttl time.Duration) *baton.Session {
			p := proxy.Start(t, srv.SecureAddr())
			s := openAt(t, p.Addr(), ttl, WithTLS(cfg), digest("alice"), WithACL(CreatorACL...))
			mu.Lock()
			proxies[s] = p
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
		DropCreateReply: func(_ testing.TB, s *baton.Session) { dropNextCreateReply(s) },
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
	})
}
