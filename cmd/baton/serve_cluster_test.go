package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/testca"
)

// TestServeCluster: three `baton serve` member processes on loopback with
// peer TLS form a cluster (two from --initial-cluster, one from a
// --cluster file); each startup line names the leader and the --store
// URL of all three; `baton serve members` lists them with one leader;
// `baton lock` works through the three; `--join` adds a fourth member,
// which restarted on its data dir rejoins; a member restarted on its data
// dir rejoins too.
func TestServeCluster(t *testing.T) {
	t.Parallel()
	ca := testca.New(t, "peers")
	dir := t.TempDir()
	var clients, peers [4]string
	addrs := freeAddrs(t, len(clients)+len(peers))
	copy(clients[:], addrs)
	copy(peers[:], addrs[len(clients):])
	var initial []string
	file := "# name peer client\n"
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("n%d=%s", i+1, peers[i]))
		file += fmt.Sprintf("n%d %s %s\n", i+1, peers[i], clients[i])
	}
	clusterFile := filepath.Join(dir, "cluster")
	if err := os.WriteFile(clusterFile, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	args := func(i int) []string {
		c := ca.Issue(t, fmt.Sprintf("n%d", i+1))
		a := []string{"serve", "--name", fmt.Sprintf("n%d", i+1), "--data-dir", filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			"--peer-tls-cert", c.CertFile, "--peer-tls-key", c.KeyFile, "--peer-tls-ca", ca.CertFile}
		switch i {
		case 0, 1:
			return append(a, "--listen", clients[i], "--initial-cluster", strings.Join(initial, ","))
		case 2:
			return append(a, "--cluster", clusterFile)
		default:
			return append(a, "--listen", clients[i], "--listen-peer", peers[i], "--join", "etcd://"+clients[0])
		}
	}
	var members [4]*proc
	for i := range 3 {
		members[i] = start(t, env(), args(i)...)
	}
	store := "etcd://" + strings.Join(clients[:3], ",")
	line := regexp.MustCompile(`etcd member (n\d) serving on (\S+) \(peers over TLS on (\S+); .*\); cluster of (\d), leader (n\d); use --store (\S+); Ctrl-C stops`)
	check := func(i, size int, store string) {
		t.Helper()
		members[i].waitOutput("Ctrl-C stops\n", 60*time.Second)
		lines := strings.Split(strings.TrimSpace(members[i].stdout.String()), "\n")
		m := line.FindStringSubmatch(lines[len(lines)-1])
		if m == nil || m[1] != fmt.Sprintf("n%d", i+1) || m[2] != clients[i] || m[3] != peers[i] || m[4] != fmt.Sprint(size) || m[6] != store {
			t.Fatalf("member n%d printed %q, want member n%d on %s (peers %s), cluster of %d, --store %s", i+1, lines, i+1, clients[i], peers[i], size, store)
		}
		t.Logf("%s", lines[len(lines)-1])
	}
	for i := range 3 {
		check(i, 3, store)
	}
	listMembers := func(want int) string {
		t.Helper()
		out, stderr, code := run(t, env(), "serve", "members", "--store", store)
		rows := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(rows) != want+1 || strings.Count(out, " leader\n") != 1 {
			t.Fatalf("serve members: exit %d, stdout %q, stderr %q; want %d members, one leader", code, out, stderr, want)
		}
		return out
	}
	t.Logf("members:\n%s", listMembers(3))
	if out, stderr, code := run(t, env(), "lock", "--store", store, "/cluster", "--", "echo", "held"); code != 0 || out != "held\n" {
		t.Fatalf("lock through the cluster: exit %d, stdout %q, stderr %q", code, out, stderr)
	}

	members[3] = start(t, env(), args(3)...)
	check(3, 4, "etcd://"+strings.Join(clients[:], ","))
	listMembers(4)
	for _, i := range []int{3, 0} {
		members[i].signal(syscall.SIGTERM)
		if code := members[i].wait(30 * time.Second); code != 0 {
			t.Fatalf("member n%d exit %d: %q", i+1, code, members[i].stderr.String())
		}
		members[i] = start(t, env(), args(i)...) // same flags, same data dir
		check(i, 4, "etcd://"+strings.Join(clients[:], ","))
	}
	listMembers(4)
	for _, p := range members {
		p.signal(syscall.SIGTERM)
	}
	for i, p := range members {
		if code := p.wait(30 * time.Second); code != 0 {
			t.Errorf("member n%d exit %d: %q", i+1, code, p.stderr.String())
		}
	}
}

// TestServeClusterUsage: wrong cluster flags are usage errors (exit 2),
// before any data dir is made.
func TestServeClusterUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--name", "n1"}, "give one of --initial-cluster, --cluster and --join"},
		{[]string{"--initial-cluster", "n1=127.0.0.1:1"}, "a member of a cluster needs --name"},
		{[]string{"--name", "n1", "--initial-cluster", "n2=127.0.0.1:1"}, `--initial-cluster has no member "n1"`},
		{[]string{"--name", "n1", "--initial-cluster", "n1"}, "want NAME=host:port"},
		{[]string{"--name", "n1", "--initial-cluster", "n1=https://127.0.0.1:1"}, "peer URLs here are http://"},
		{[]string{"--name", "n1", "--join", "etcd://127.0.0.1:1"}, "--join needs --listen-peer"},
		{[]string{"--name", "n1", "--join", "zk://127.0.0.1:1", "--listen-peer", "127.0.0.1:2"}, "want the cluster's etcd://"},
		{[]string{"--listen-peer", "127.0.0.1:2"}, "--listen-peer and --advertise-peer need --name"},
		{[]string{"--peer-tls-cert", "x.pem"}, "--peer-tls-cert and --peer-tls-key go together"},
		{[]string{"--name", "n1", "--cluster", filepath.Join(dir, "none")}, "--cluster:"},
	} {
		data := filepath.Join(dir, "data")
		_, stderr, code := run(t, env(), append([]string{"serve", "--data-dir", data}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("serve %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
		if _, err := os.Stat(data); err == nil {
			t.Errorf("serve %q left a data dir", tc.args)
		}
	}
}

// TestServeClusterFirstMemberDown: with the first member of a cluster
// --store down (the other two serve), `serve members`, `lock` and
// `status` answer through the others without waiting on it. They asked it
// first, for its version or the leader, with the whole dial timeout
// (5 s): `serve members` failed, `lock` and `status` took 5 s. Each must
// now take under the dial timeout less a second (unloaded they take
// 0.05 s; on a loaded machine about 1 s, as with the last member down,
// logged for comparison).
func TestServeClusterFirstMemberDown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addrs := freeAddrs(t, 6)
	clients := addrs[:3]
	var initial []string
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("n%d=%s", i+1, addrs[3+i]))
	}
	var members []*proc
	for i := range 3 {
		members = append(members, start(t, env(), "serve", "--name", fmt.Sprintf("n%d", i+1),
			"--data-dir", filepath.Join(dir, fmt.Sprintf("n%d", i+1)), "--listen", clients[i],
			"--initial-cluster", strings.Join(initial, ",")))
	}
	for _, p := range members {
		p.waitOutput("Ctrl-C stops\n", 60*time.Second)
	}
	store := "etcd://" + strings.Join(clients, ",")
	const bound = 4 * time.Second // the client's dial timeout (5 s), less a second
	timed := func(down string, args ...string) {
		t.Helper()
		t0 := time.Now()
		out, stderr, code := run(t, env(), args...)
		d := time.Since(t0)
		t.Logf("%s down: baton %s: %v", down, args[0], d.Round(time.Millisecond))
		if code != 0 {
			t.Fatalf("%s down: baton %q: exit %d, stdout %q, stderr %q", down, args, code, out, stderr)
		}
		if args[0] == "serve" && strings.Count(out, " leader\n") != 1 {
			t.Errorf("%s down: serve members printed %q, want one leader", down, out)
		}
		if down == "n1" && d > bound {
			t.Errorf("%s down: baton %s took %v, bound %v", down, args[0], d.Round(time.Millisecond), bound)
		}
	}
	for _, down := range []int{2, 0} {
		members[down].signal(syscall.SIGKILL)
		members[down].wait(30 * time.Second)
		// The two left elect a leader if needed (on a loaded machine
		// they may take a few tries); then the cluster serves.
		var up []string
		for i, c := range clients {
			if i != down {
				up = append(up, c)
			}
		}
		var stderr string
		if !await.Within(60*time.Second, func() bool {
			var code int
			_, stderr, code = run(t, env(), "lock", "--store", "etcd://"+strings.Join(up, ","), "/first-down", "--", "true")
			return code == 0
		}) {
			t.Fatalf("lock through the members up: %q", stderr)
		}
		name := fmt.Sprintf("n%d", down+1)
		timed(name, "serve", "members", "--store", store)
		timed(name, "lock", "--store", store, "/first-down", "--", "true")
		timed(name, "status", "--store", store, "/first-down")
		members[down] = start(t, env(), "serve", "--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen", clients[down], "--initial-cluster", strings.Join(initial, ","))
		members[down].waitOutput("Ctrl-C stops\n", 60*time.Second)
	}
	for _, p := range members {
		p.signal(syscall.SIGTERM)
	}
	for i, p := range members {
		if code := p.wait(30 * time.Second); code != 0 {
			t.Errorf("member n%d exit %d: %q", i+1, code, p.stderr.String())
		}
	}
}

// freeAddrs returns n distinct loopback addresses nothing listens on, for
// the servers a test starts. Picked one at a time (closedPort), two can
// be the same port, free again once its probe closed: a member was once
// given another's client address.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	ports, err := freeport.Ports(n)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, n)
	for i, p := range ports {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return addrs
}
