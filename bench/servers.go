package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/batonhq/baton/etcd/embedded"
	"github.com/batonhq/baton/internal/fourletter"
	"github.com/batonhq/baton/internal/freeport"
)

// server is one store server this program started.
type server struct {
	name string
	addr string // host:port clients use
	stop func()
}

// startProc starts a server process in its own process group, logging to
// dir/name.log, and returns a stop function that ends that group.
func startProc(dir, name string, argv ...string) (func(), error) {
	return startProcAs(dir, name, nil, argv...)
}

// startProcAs is startProc run with cred's user and group (nil: ours).
func startProcAs(dir, name string, cred *syscall.Credential, argv ...string) (func(), error) {
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	return func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		logf.Close()
	}, nil
}

// waitFor polls ready until it succeeds or limit passes.
func waitFor(limit time.Duration, ready func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startZK runs ZooKeeper from Debian's jars, configured as in DESIGN §9.
func startZK(base string) (*server, error) {
	dir := filepath.Join(base, "zk")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	port, err := freeport.Port()
	if err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"4lw.commands.whitelist=*\nadmin.enableServer=false\nmaxClientCnxns=0\n", filepath.Join(dir, "data"), port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	stop, err := startProc(dir, "zookeeper", "java", "-Xmx512m", "-XX:+UseSerialGC",
		"-Dzookeeper.admin.enableServer=false", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
		"org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(dir, "zoo.cfg"))
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitFor(60*time.Second, func() error { return ruok(addr) }); err != nil {
		stop()
		return nil, fmt.Errorf("zookeeper on %s: %w", addr, err)
	}
	return &server{name: "zookeeper", addr: addr, stop: stop}, nil
}

func ruok(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	out, err := fourletter.Ask(ctx, addr, "ruok")
	if err != nil {
		return err
	}
	if out != "imok" {
		return fmt.Errorf("ruok: %q", out)
	}
	return nil
}

// startEmbeddedEtcd runs the etcd server in this process (etcd/embedded),
// with default raft timings, or with its Fast settings (no fsync, 10 ms
// raft tick) when noFsync is set: the store "etcd-nofsync", which shows
// the locks when the disk is not what bounds them.
func startEmbeddedEtcd(ctx context.Context, base string, noFsync bool) (*server, error) {
	dir := "etcd-embedded"
	if noFsync {
		dir = "etcd-nofsync"
	}
	s, err := embedded.Start(ctx, embedded.Config{DataDir: filepath.Join(base, dir), Fast: noFsync})
	if err != nil {
		return nil, err
	}
	return &server{name: "etcd (embedded)", addr: s.Addr(), stop: func() { _ = s.Close() }}, nil
}

// startDebianEtcd runs Debian's /usr/bin/etcd (3.4) as a single member.
func startDebianEtcd(base string) (*server, error) {
	dir := filepath.Join(base, "etcd34")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cp, err := freeport.Port()
	if err != nil {
		return nil, err
	}
	pp, err := freeport.Port()
	if err != nil {
		return nil, err
	}
	cu := fmt.Sprintf("http://127.0.0.1:%d", cp)
	pu := fmt.Sprintf("http://127.0.0.1:%d", pp)
	stop, err := startProc(dir, "etcd", "/usr/bin/etcd", "--name", "bench", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", cu, "--advertise-client-urls", cu,
		"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu,
		"--initial-cluster", "bench="+pu, "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	addr := strings.TrimPrefix(cu, "http://")
	if err := waitFor(30*time.Second, func() error {
		_, err := httpHealth(cu)
		return err
	}); err != nil {
		stop()
		return nil, fmt.Errorf("etcd 3.4 on %s: %w", addr, err)
	}
	return &server{name: "etcd 3.4 (Debian)", addr: addr, stop: stop}, nil
}

func httpHealth(u string) (string, error) {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(u, "http://"), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(c, "GET /health HTTP/1.0\r\n\r\n")
	b, _ := io.ReadAll(c)
	if !strings.Contains(string(b), `"health":"true"`) {
		return "", fmt.Errorf("not healthy: %q", b)
	}
	return string(b), nil
}

// startRedis runs redis-server without persistence.
func startRedis(base string, i int, extra ...string) (*server, error) {
	dir := filepath.Join(base, fmt.Sprintf("redis%d", i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freeport.Port()
	if err != nil {
		return nil, err
	}
	stop, err := startProc(dir, "redis", append([]string{"redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir}, extra...)...)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitFor(30*time.Second, func() error { return redisPing(addr) }); err != nil {
		stop()
		return nil, fmt.Errorf("redis on %s: %w", addr, err)
	}
	return &server{name: "redis", addr: addr, stop: stop}, nil
}

func redisPing(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "PING\r\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("ping: %q", line)
	}
	return nil
}

// startServeCluster runs a three-member cluster of `baton serve` processes
// (the baton binary bin, default raft timings and fsync) and returns once
// every member is healthy.
func startServeCluster(base, bin string) ([]*server, error) {
	if bin == "" {
		return nil, fmt.Errorf("serve3 needs the baton binary")
	}
	type member struct{ name, client, peer string }
	var ms []member
	var initial []string
	for i := range 3 {
		cp, err := freeport.Port()
		if err != nil {
			return nil, err
		}
		pp, err := freeport.Port()
		if err != nil {
			return nil, err
		}
		m := member{fmt.Sprintf("n%d", i+1), fmt.Sprintf("127.0.0.1:%d", cp), fmt.Sprintf("127.0.0.1:%d", pp)}
		ms = append(ms, m)
		initial = append(initial, m.name+"="+m.peer)
	}
	var servers []*server
	fail := func(err error) ([]*server, error) {
		for _, s := range servers {
			s.stop()
		}
		return nil, err
	}
	for _, m := range ms {
		dir := filepath.Join(base, "serve3-"+m.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fail(err)
		}
		stop, err := startProc(dir, "baton-serve", bin, "serve", "--name", m.name, "--data-dir", filepath.Join(dir, "data"),
			"--listen", m.client, "--listen-peer", m.peer, "--initial-cluster", strings.Join(initial, ","))
		if err != nil {
			return fail(err)
		}
		servers = append(servers, &server{name: "baton serve " + m.name, addr: m.client, stop: stop})
	}
	for _, m := range ms {
		if err := waitFor(60*time.Second, func() error {
			_, err := httpHealth("http://" + m.client)
			return err
		}); err != nil {
			return fail(fmt.Errorf("baton serve %s on %s: %w", m.name, m.client, err))
		}
	}
	return servers, nil
}

// joinRedisCluster makes the servers at addrs (started with
// --cluster-enabled yes) one Redis Cluster, a replica for each master,
// and waits until every node reports cluster_state:ok.
func joinRedisCluster(addrs []string, replicas int) error {
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", fmt.Sprint(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli --cluster create: %v: %s", err, out)
	}
	return waitFor(30*time.Second, func() error {
		for _, a := range addrs {
			host, port, _ := net.SplitHostPort(a)
			out, err := exec.Command("redis-cli", "-h", host, "-p", port, "cluster", "info").Output()
			if err != nil || !strings.Contains(string(out), "cluster_state:ok") {
				return fmt.Errorf("%s: cluster not ok yet: %v", a, err)
			}
		}
		return nil
	})
}
