package redistest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/testca"
	"github.com/batonhq/baton/internal/testenv"
)

// MasterName is the name a Topology's sentinels monitor its master by.
const MasterName = "baton"

// Sentinel timings: a master silent for DownAfter is down, and a failover
// is over within a few seconds.
const (
	DownAfter       = 1000 * time.Millisecond
	failoverTimeout = 3000 * time.Millisecond
)

// Topology is one master, its replicas and the sentinels that monitor it
// (redis-sentinel, Debian's redis-sentinel package), all on loopback,
// stopped when the test ends.
type Topology struct {
	t         testing.TB
	Servers   []*Server // Servers[0] is the first master, the others its replicas
	Sentinels []*Server
	tls       tlsFiles // the servers' (one CA), with TLS
}

// SentinelBinary returns the path of redis-sentinel, failing the test
// under CI and skipping it otherwise when it is missing.
func SentinelBinary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("redis-sentinel")
	testenv.Require(t, "redistest: redis-sentinel (install Debian's redis-sentinel)", err)
	return p
}

// StartSentinel starts a master with the given number of replicas and
// sentinels (quorum: a majority of them), and waits until the replicas
// are in sync and every sentinel knows the others and the replicas, so
// that a failover can start as soon as the master dies.
func StartSentinel(t testing.TB, replicas, sentinels int) *Topology {
	t.Helper()
	return startSentinel(t, replicas, sentinels, false)
}

// StartTLSSentinel is StartSentinel with every server and sentinel
// accepting only TLS (clients and replication), with certificates signed
// by one throwaway CA (see Topology.CAFile). The sentinels' certificates
// name 127.0.0.1 and localhost; the master's and the replicas' name only
// 127.0.0.1, the address the sentinels announce them by, so that a client
// checking a master's certificate against a sentinel's host name fails.
func StartTLSSentinel(t testing.TB, replicas, sentinels int) *Topology {
	t.Helper()
	return startSentinel(t, replicas, sentinels, true)
}

func startSentinel(t testing.TB, replicas, sentinels int, withTLS bool) *Topology {
	t.Helper()
	sbin := SentinelBinary(t)
	tp := &Topology{t: t}
	// Replicas replicate as the user repl, so that CutReplicas can
	// refuse them.
	repl := []string{"user repl on >" + replPassword + " ~* &* +@all", "masteruser repl", "masterauth " + replPassword, "repl-diskless-sync-delay 0"}
	var sfiles tlsFiles
	if withTLS {
		ca := testca.New(t, "redistest")
		srv := ca.IssueFor(t, "server", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
		sen := ca.Issue(t, "sentinel")
		tp.tls = tlsFiles{CA: ca.CertFile, Cert: srv.CertFile, Key: srv.KeyFile}
		sfiles = tlsFiles{CA: ca.CertFile, Cert: sen.CertFile, Key: sen.KeyFile}
		repl = append(repl, "tls-replication yes")
	}
	master := startWith(t, Config{Conf: repl, TLS: withTLS}, tp.tls)
	tp.Servers = append(tp.Servers, master)
	for range replicas {
		tp.Servers = append(tp.Servers, startWith(t, Config{TLS: withTLS, Conf: append(slices.Clone(repl), "replicaof 127.0.0.1 "+strconv.Itoa(master.port))}, tp.tls))
	}
	for range sentinels {
		s := &Server{t: t, dir: t.TempDir(), tls: sfiles, cfg: Config{sentinel: true, TLS: withTLS, Conf: []string{
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", MasterName, master.port, sentinels/2+1),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", MasterName, DownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", MasterName, failoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s %d", MasterName, replicas),
		}}}
		if withTLS {
			s.cfg.Conf = append(s.cfg.Conf, "tls-replication yes")
		}
		var err error
		for range 5 {
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
		tp.Sentinels = append(tp.Sentinels, s)
	}
	tp.waitSettled(master.Addr(), replicas, 30*time.Second)
	return tp
}

// CAFile is the PEM file of the CA that signed every server's and
// sentinel's certificate ("" without TLS).
func (tp *Topology) CAFile() string { return tp.tls.CA }

// options are a go-redis client's options for the server or sentinel at
// addr (over TLS, trusting CAFile, with TLS).
func (tp *Topology) options(addr string) *goredis.Options {
	o := &goredis.Options{Addr: addr, MaxRetries: -1}
	if tp.tls.CA != "" {
		pem, err := os.ReadFile(tp.tls.CA)
		if err != nil {
			tp.t.Fatalf("redistest: %v", err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		o.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return o
}

// replPassword is the password of the user replicas replicate as.
const replPassword = "replpass"

// CutReplicas partitions the master from its replicas: it closes their
// replication links and refuses them from now on (it deletes the user
// they replicate as, on the master only), so nothing the master writes
// afterwards reaches them. The sentinels still see every server, and a
// replica they promote serves the others (and the killed master, once
// restarted) as before.
func (tp *Topology) CutReplicas() {
	tp.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc := goredis.NewClient(tp.options(tp.MasterAddr()))
	defer rc.Close()
	if err := rc.ACLDelUser(ctx, "repl").Err(); err != nil {
		tp.t.Fatalf("redistest: cut the replicas: %v", err)
	}
	if err := rc.Do(ctx, "client", "kill", "type", "replica").Err(); err != nil {
		tp.t.Fatalf("redistest: cut the replicas: %v", err)
	}
	info, err := rc.Info(ctx, "replication").Result()
	if err != nil || !strings.Contains(info, "connected_slaves:0") {
		tp.t.Fatalf("redistest: replicas still connected after the cut: %v %s", err, info)
	}
}

// Rejoin restarts the server at addr (killed, say, by a test) as a
// replica of the master at master, as the sentinels would make it, but
// at once: they take up to ten seconds to notice that it is back.
// Without persistence it comes back empty and syncs from master.
func (tp *Topology) Rejoin(addr, master string) {
	tp.t.Helper()
	s := tp.Server(addr)
	_, port, _ := net.SplitHostPort(master)
	var conf []string
	for _, l := range s.cfg.Conf {
		if !strings.HasPrefix(l, "replicaof ") {
			conf = append(conf, l)
		}
	}
	s.cfg.Conf = append(conf, "replicaof 127.0.0.1 "+port)
	s.Restart()
}

// URL is the redis-sentinel:// URL of the topology.
func (tp *Topology) URL() string {
	addrs := make([]string, len(tp.Sentinels))
	for i, s := range tp.Sentinels {
		addrs[i] = s.Addr()
	}
	if tp.tls.CA != "" {
		return "rediss-sentinel://" + strings.Join(addrs, ",") + "/" + MasterName
	}
	return "redis-sentinel://" + strings.Join(addrs, ",") + "/" + MasterName
}

// MasterAddr is the master's address as the first sentinel that answers
// names it ("" if none does).
func (tp *Topology) MasterAddr() string {
	for _, s := range tp.Sentinels {
		if a := tp.ask(s); a != "" {
			return a
		}
	}
	return ""
}

func (tp *Topology) ask(s *Server) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	sc := goredis.NewSentinelClient(tp.options(s.Addr()))
	defer sc.Close()
	a, err := sc.GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil || len(a) != 2 {
		return ""
	}
	return net.JoinHostPort(a[0], a[1])
}

// Master is the server the sentinels name master now.
func (tp *Topology) Master() *Server {
	a := tp.MasterAddr()
	for _, s := range tp.Servers {
		if s.Addr() == a {
			return s
		}
	}
	tp.t.Fatalf("redistest: no server is the master the sentinels name (%q)", a)
	return nil
}

// Server returns the server at addr, or nil.
func (tp *Topology) Server(addr string) *Server {
	for _, s := range tp.Servers {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// WaitFailover waits (at most d) until every sentinel names a master
// other than old, and returns its address; "" if d passed first.
func (tp *Topology) WaitFailover(old string, d time.Duration) string {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		a, all := "", true
		for _, s := range tp.Sentinels {
			got := tp.ask(s)
			if got == "" || got == old || (a != "" && got != a) {
				all = false
				break
			}
			a = got
		}
		if all {
			return a
		}
		time.Sleep(50 * time.Millisecond) // polling the sentinels, not ordering events
	}
	return ""
}

// WaitReplicas waits (at most d) until the master at addr has n replicas
// online, and reports whether it did.
func (tp *Topology) WaitReplicas(addr string, n int, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	rc := goredis.NewClient(tp.options(addr))
	defer rc.Close()
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "role:master") && strings.Count(info, ",state=online,") >= n {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond): // polling the server
		}
	}
}

// waitSettled waits until the replicas are in sync with the master and
// every sentinel knows the others and the replicas.
func (tp *Topology) waitSettled(master string, replicas int, d time.Duration) {
	tp.t.Helper()
	if !tp.WaitReplicas(master, replicas, d) {
		tp.t.Fatalf("redistest: %d replicas not online on %s within %v", replicas, master, d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for _, s := range tp.Sentinels {
		sc := goredis.NewSentinelClient(tp.options(s.Addr()))
		for {
			m, err := sc.Master(ctx, MasterName).Result()
			if err == nil && m["num-other-sentinels"] == strconv.Itoa(len(tp.Sentinels)-1) && m["num-slaves"] == strconv.Itoa(replicas) {
				break
			}
			select {
			case <-ctx.Done():
				_ = sc.Close()
				tp.t.Fatalf("redistest: sentinel %s did not see the topology within %v: %v %v", s.Addr(), d, m, err)
			case <-time.After(100 * time.Millisecond): // polling the sentinel
			}
		}
		_ = sc.Close()
	}
}
