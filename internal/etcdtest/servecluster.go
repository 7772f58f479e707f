package etcdtest

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/proxy"
)

// ServeCluster is a cluster of `baton serve` member processes on
// loopback, built from this module's cmd/baton and started by the test.
// Every member advertises a TCP proxy in front of its peer port, so a
// test can cut the member's peer traffic (Proxy).
type ServeCluster struct {
	t       testing.TB
	bin     string
	dir     string
	initial string
	Members []*ServeMember
}

// ServeMember is one member process.
type ServeMember struct {
	Name   string
	Client string       // client host:port
	Peer   string       // peer host:port it listens on
	Proxy  *proxy.Proxy // in front of Peer; the address the others use
	out    *lockedBuffer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartServeCluster builds baton and starts an n-member cluster, each
// member with a free client port, a free peer port behind a proxy and a
// data dir of its own, and returns once every member serves. The test's
// cleanup kills them.
func StartServeCluster(t testing.TB, n int) *ServeCluster {
	t.Helper()
	c := &ServeCluster{t: t, dir: t.TempDir()}
	c.bin = filepath.Join(c.dir, "baton")
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("etcdtest: cannot locate cmd/baton")
	}
	// go test puts its own go command first on PATH.
	build := exec.Command("go", "build", "-o", c.bin, ".")
	build.Dir = filepath.Join(filepath.Dir(file), "..", "..", "cmd", "baton")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("etcdtest: build baton: %v\n%s", err, out)
	}
	var parts []string
	for i := range n {
		client, err := freeport.Addr()
		if err != nil {
			t.Fatal(err)
		}
		peer, err := freeport.Addr()
		if err != nil {
			t.Fatal(err)
		}
		m := &ServeMember{Name: fmt.Sprintf("n%d", i+1), Client: client, Peer: peer, Proxy: proxy.Start(t, peer)}
		parts = append(parts, m.Name+"="+m.Proxy.Addr())
		c.Members = append(c.Members, m)
	}
	c.initial = strings.Join(parts, ",")
	t.Cleanup(func() {
		for i := range c.Members {
			c.Kill(i)
		}
	})
	for i := range c.Members {
		c.launch(i)
	}
	for i := range c.Members {
		c.waitServing(i, 60*time.Second)
	}
	return c
}

// launch starts member i's process (its first start, or a restart on its
// data dir) without waiting.
func (c *ServeCluster) launch(i int) {
	m := c.Members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	m.out = &lockedBuffer{}
	m.cmd = exec.Command(c.bin, "serve", "--name", m.Name, "--data-dir", filepath.Join(c.dir, m.Name),
		"--listen", m.Client, "--listen-peer", m.Peer, "--advertise-peer", m.Proxy.Addr(), "--initial-cluster", c.initial)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	if err := m.cmd.Start(); err != nil {
		c.t.Fatalf("etcdtest: start member %s: %v", m.Name, err)
	}
	done := make(chan struct{})
	m.done = done
	cmd := m.cmd
	go func() { _ = cmd.Wait(); close(done) }()
}

// waitServing waits until member i printed its startup line.
func (c *ServeCluster) waitServing(i int, d time.Duration) {
	c.t.Helper()
	m := c.Members[i]
	m.mu.Lock()
	out, done := m.out, m.done
	m.mu.Unlock()
	deadline := time.After(d)
	for !strings.Contains(out.String(), "Ctrl-C stops") {
		select {
		case <-done:
			c.t.Fatalf("etcdtest: member %s exited: %s", m.Name, out.String())
		case <-deadline:
			c.t.Fatalf("etcdtest: member %s not serving after %v: %s", m.Name, d, out.String())
		case <-time.After(10 * time.Millisecond): // poll interval
		}
	}
}

// Output is what member i printed since its last start.
func (c *ServeCluster) Output(i int) string {
	m := c.Members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.out.String()
}

// Kill kills member i (SIGKILL, as a crash) and waits for it to exit.
// Killing a dead member does nothing.
func (c *ServeCluster) Kill(i int) {
	m := c.Members[i]
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Start restarts member i on its data dir and returns once it serves
// (which needs a quorum).
func (c *ServeCluster) Start(i int) {
	c.t.Helper()
	c.launch(i)
	c.waitServing(i, 60*time.Second)
}

// StartAll restarts every member at once (a member serves only once a
// quorum is up) and returns once they all serve.
func (c *ServeCluster) StartAll() {
	c.t.Helper()
	for i := range c.Members {
		c.launch(i)
	}
	for i := range c.Members {
		c.waitServing(i, 60*time.Second)
	}
}

// Endpoints are the client URLs of every member.
func (c *ServeCluster) Endpoints() []string {
	eps := make([]string, len(c.Members))
	for i, m := range c.Members {
		eps[i] = "http://" + m.Client
	}
	return eps
}

// Hosts are the client host:ports of every member, comma-separated, as
// in an etcd:// URL.
func (c *ServeCluster) Hosts() string {
	hs := make([]string, len(c.Members))
	for i, m := range c.Members {
		hs[i] = m.Client
	}
	return strings.Join(hs, ",")
}

// Leader returns the index of the member that leads, asking the members
// that answer, waiting up to d for one to be elected.
func (c *ServeCluster) Leader(d time.Duration) int {
	c.t.Helper()
	leader := -1
	await.Until(c.t, d, "an elected leader", func() bool {
		for _, m := range c.Members {
			if i, ok := c.leaderBy(m.Client); ok {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
}

// leaderBy asks the member at client who leads.
func (c *ServeCluster) leaderBy(client string) (int, bool) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + client}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := cli.Status(ctx, "http://"+client)
	if err != nil || st.Leader == 0 {
		return 0, false
	}
	ml, err := cli.MemberList(ctx)
	if err != nil {
		return 0, false
	}
	for _, mb := range ml.Members {
		if mb.ID == st.Leader {
			for i, m := range c.Members {
				if m.Name == mb.Name {
					return i, true
				}
			}
		}
	}
	return 0, false
}

// WaitHealthy waits up to d until every member answers a linearizable
// read.
func (c *ServeCluster) WaitHealthy(d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for _, m := range c.Members {
		var err error
		if !await.Within(time.Until(deadline), func() bool {
			var cli *clientv3.Client
			cli, err = clientv3.New(clientv3.Config{Endpoints: []string{"http://" + m.Client}, DialTimeout: time.Second, Logger: zap.NewNop()})
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err = cli.Get(ctx, "health")
				cancel()
				_ = cli.Close()
			}
			return err == nil
		}) {
			c.t.Fatalf("etcdtest: member %s not healthy within %v: %v", m.Name, d, err)
		}
	}
}

// Pause stops member i (SIGSTOP): it answers neither its peers nor its
// clients, and its connections stay open, as a member cut off by a
// network partition or frozen in a long pause. Resume undoes it.
func (c *ServeCluster) Pause(i int) { c.signal(i, syscall.SIGSTOP) }

// Resume continues member i after Pause (SIGCONT).
func (c *ServeCluster) Resume(i int) { c.signal(i, syscall.SIGCONT) }

func (c *ServeCluster) signal(i int, sig syscall.Signal) {
	c.t.Helper()
	m := c.Members[i]
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("etcdtest: signal member %s: %v", m.Name, err)
	}
}

// Describe reports, member by member, what a stalled test needs to know:
// who it thinks leads, its raft and store revisions, and the keys under
// prefix as it has them (a serializable read), each with its create
// revision, its lease and that lease's remaining TTL.
func (c *ServeCluster) Describe(prefix string) string {
	var b strings.Builder
	for _, m := range c.Members {
		fmt.Fprintf(&b, "member %s (%s): ", m.Name, m.Client)
		ep := "http://" + m.Client
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			fmt.Fprintf(&b, "%v\n", err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if st, err := cli.Status(ctx, ep); err != nil {
			fmt.Fprintf(&b, "status: %v\n", err)
		} else {
			fmt.Fprintf(&b, "id %x leader %x term %d raft index %d applied %d revision %d errors %v\n",
				st.Header.MemberId, st.Leader, st.RaftTerm, st.RaftIndex, st.RaftAppliedIndex, st.Header.Revision, st.Errors)
		}
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSerializable())
		if err != nil {
			fmt.Fprintf(&b, "  keys: %v\n", err)
		} else {
			for _, kv := range resp.Kvs {
				fmt.Fprintf(&b, "  key %s create %d lease %x", kv.Key, kv.CreateRevision, kv.Lease)
				if kv.Lease != 0 {
					if ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease)); err != nil {
						fmt.Fprintf(&b, " ttl: %v", err)
					} else {
						fmt.Fprintf(&b, " ttl %ds", ttl.TTL)
					}
				}
				b.WriteString("\n")
			}
		}
		cancel()
		_ = cli.Close()
	}
	return b.String()
}
