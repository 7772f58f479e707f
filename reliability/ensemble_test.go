package reliability

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/fourletter"
	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/zktest"
)

// ensemble is a 3-node ZooKeeper ensemble on loopback, from Debian's
// package, each node a QuorumPeerMain process that can be killed and
// restarted on the same data dir.
type ensemble struct {
	t      *testing.T
	dir    string
	client [3]int
	procs  [3]*exec.Cmd
	exited [3]chan struct{}
}

func startEnsemble(t *testing.T) *ensemble {
	zktest.Require(t)
	e := &ensemble{t: t, dir: t.TempDir()}
	ports, err := freeport.Ports(9)
	if err != nil {
		t.Fatal(err)
	}
	var servers []string
	for i := range 3 {
		e.client[i] = ports[i]
		servers = append(servers, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, ports[3+i], ports[6+i]))
	}
	for i := range 3 {
		data := filepath.Join(e.dir, fmt.Sprint(i), "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprint(i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := strings.Join(append([]string{
			"tickTime=100", "initLimit=20", "syncLimit=10",
			"dataDir=" + data,
			fmt.Sprintf("clientPort=%d", e.client[i]),
			"clientPortAddress=127.0.0.1",
			"maxSessionTimeout=60000",
			"4lw.commands.whitelist=*", "admin.enableServer=false", "maxClientCnxns=0", "forceSync=no",
		}, servers...), "\n") + "\n"
		if err := os.WriteFile(filepath.Join(e.dir, fmt.Sprint(i), "zoo.cfg"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := range 3 {
			e.kill(i)
		}
	})
	for i := range 3 {
		e.start(i)
	}
	e.waitQuorum(60 * time.Second)
	return e
}

func (e *ensemble) servers() []string {
	var s []string
	for _, p := range e.client {
		s = append(s, fmt.Sprintf("127.0.0.1:%d", p))
	}
	return s
}

func (e *ensemble) start(i int) {
	run := filepath.Join(e.dir, fmt.Sprint(i))
	logf, err := os.OpenFile(filepath.Join(run, "zookeeper.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command("java", "-Xmx192m", "-XX:+UseSerialGC",
		"-Dzookeeper.admin.enableServer=false",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", zktest.Classpath(),
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(run, "zoo.cfg"))
	cmd.Dir = run
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	e.procs[i], e.exited[i] = cmd, done
}

func (e *ensemble) kill(i int) {
	if e.procs[i] == nil {
		return
	}
	_ = syscall.Kill(-e.procs[i].Process.Pid, syscall.SIGKILL)
	<-e.exited[i]
	e.procs[i] = nil
}

// mode asks node i for its role: "leader", "follower" or "" when it does
// not serve.
func (e *ensemble) mode(i int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := fourletter.Ask(ctx, fmt.Sprintf("127.0.0.1:%d", e.client[i]), "srvr")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// leader returns the index of the leader, waiting for one up to d.
func (e *ensemble) leader(d time.Duration) int {
	leader := -1
	await.Until(e.t, d, "a leader", func() bool {
		for i := range 3 {
			if e.procs[i] != nil && e.mode(i) == "leader" {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
}

// waitQuorum waits until every running node serves as leader or follower.
func (e *ensemble) waitQuorum(d time.Duration) {
	await.Until(e.t, d, "every running node to serve", func() bool {
		for i := range 3 {
			if e.procs[i] != nil {
				if m := e.mode(i); m != "leader" && m != "follower" {
					return false
				}
			}
		}
		return true
	})
}
