package redistest

import (
	"bufio"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
)

// NodeTimeout is a cluster node's cluster-node-timeout: how long a master
// may be unreachable before its replica is promoted (plus an election).
const NodeTimeout = 1000 * time.Millisecond

// clusterTimeout bounds each wait for the cluster to agree on its state.
const clusterTimeout = 30 * time.Second

// Cluster is a Redis Cluster of redis-server processes made by
// StartCluster.
type Cluster struct {
	t     testing.TB
	cli   string
	tls   tlsFiles  // every node's (one CA), with TLS
	Nodes []*Server // masters first, then their replicas, as created
}

// StartCluster starts masters*(1+replicas) servers in cluster mode and
// joins them with redis-cli --cluster create (each master gets replicas
// replicas and a third of the slots, for three masters), waiting until
// every node reports cluster_state:ok. The servers stop when the test
// ends.
func StartCluster(t testing.TB, masters, replicas int) *Cluster {
	t.Helper()
	return startCluster(t, masters, replicas, false)
}

// StartTLSCluster is StartCluster with every node accepting only TLS
// (clients, the cluster bus and replication), with certificates for
// 127.0.0.1 signed by one throwaway CA (see Cluster.CAFile).
func StartTLSCluster(t testing.TB, masters, replicas int) *Cluster {
	t.Helper()
	return startCluster(t, masters, replicas, true)
}

func startCluster(t testing.TB, masters, replicas int, tls bool) *Cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	testenv.Require(t, "redistest: redis-cli (install Debian's redis-tools)", err)
	c := &Cluster{t: t, cli: cli}
	cfg := Config{Cluster: true, TLS: tls}
	if tls {
		c.tls = newTLSFiles(t)
	}
	for range masters * (1 + replicas) {
		c.Nodes = append(c.Nodes, startWith(t, cfg, c.tls))
	}
	args := []string{"--cluster", "create"}
	for _, s := range c.Nodes {
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := c.run(args...); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitOK()
	return c
}

// URL is a redis-cluster:// URL naming every node (rediss-cluster://
// with TLS).
func (c *Cluster) URL() string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr()
	}
	if c.tls.CA != "" {
		return "rediss-cluster://" + strings.Join(addrs, ",")
	}
	return "redis-cluster://" + strings.Join(addrs, ",")
}

// CAFile is the PEM file of the CA that signed every node's certificate
// ("" without TLS).
func (c *Cluster) CAFile() string { return c.tls.CA }

func (c *Cluster) run(args ...string) (string, error) {
	if c.tls.CA != "" {
		args = append([]string{"--tls", "--cacert", c.tls.CA}, args...)
	}
	cmd := exec.Command(c.cli, args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Cmd runs one command on node s with redis-cli and returns its output.
func (c *Cluster) Cmd(s *Server, args ...string) (string, error) {
	return c.run(append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(s.port)}, args...)...)
}

// ID is node s's cluster node id.
func (c *Cluster) ID(s *Server) string {
	c.t.Helper()
	out, err := c.Cmd(s, "cluster", "myid")
	if err != nil {
		c.t.Fatalf("redistest: cluster myid on %s: %v: %s", s.Addr(), err, out)
	}
	return strings.TrimSpace(out)
}

// MasterOf is the running node that owns slot, as the running nodes'
// CLUSTER SHARDS says; nil if none.
func (c *Cluster) MasterOf(slot int) *Server {
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		out, err := c.Cmd(s, "cluster", "nodes")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 9 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
				continue
			}
			for _, r := range f[8:] {
				lo, hi, ok := strings.Cut(r, "-")
				if !ok {
					hi = lo
				}
				a, err1 := strconv.Atoi(lo)
				b, err2 := strconv.Atoi(hi)
				if err1 == nil && err2 == nil && a <= slot && slot <= b {
					addr, _, _ := strings.Cut(f[1], "@")
					for _, n := range c.Nodes {
						if n.Addr() == addr {
							return n
						}
					}
				}
			}
		}
		return nil
	}
	return nil
}

// WaitOK waits until every running node reports cluster_state:ok and
// that all 16384 slots are served, and every running replica's link to
// its master is up with no sync in progress (a replica promoted before
// its first sync would come up empty), failing the test after 30 s.
func (c *Cluster) WaitOK() {
	c.t.Helper()
	deadline := time.Now().Add(clusterTimeout)
	for {
		bad := ""
		for _, s := range c.Nodes {
			if !s.Running() {
				continue
			}
			out, err := c.Cmd(s, "cluster", "info")
			if err != nil || !strings.Contains(out, "cluster_state:ok") || !strings.Contains(out, "cluster_slots_ok:16384") {
				bad = fmt.Sprintf("%s: %v %s", s.Addr(), err, firstLines(out, 3))
				break
			}
			out, err = c.Cmd(s, "info", "replication")
			if err != nil || strings.Contains(out, "role:slave") &&
				(!strings.Contains(out, "master_link_status:up") || !strings.Contains(out, "master_sync_in_progress:0")) {
				bad = fmt.Sprintf("%s: replica not in sync: %v %s", s.Addr(), err, firstLines(out, 6))
				break
			}
		}
		if bad == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("redistest: cluster not ok after %v: %s", clusterTimeout, bad)
		}
		time.Sleep(50 * time.Millisecond) // polling the servers' own state
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " ")
}

// Reshard moves n slots from node from to node to with redis-cli --cluster
// reshard (keys move with MIGRATE; clients see ASK, then MOVED).
func (c *Cluster) Reshard(from, to *Server, n int) (string, error) {
	return c.run("--cluster", "reshard", from.Addr(),
		"--cluster-from", c.ID(from), "--cluster-to", c.ID(to),
		"--cluster-slots", strconv.Itoa(n), "--cluster-yes")
}

// Promoted waits until a running node other than old owns slot as a
// master (old's replica was promoted after old was killed), and returns
// it; it fails the test after 30 s.
func (c *Cluster) Promoted(slot int, old *Server) *Server {
	c.t.Helper()
	deadline := time.Now().Add(clusterTimeout)
	for {
		if m := c.MasterOf(slot); m != nil && m != old {
			return m
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("redistest: slot %d has no new master %v after %s was killed", slot, clusterTimeout, old.Addr())
		}
		time.Sleep(50 * time.Millisecond) // polling the servers' own state
	}
}
