// Package zktest runs a real ZooKeeper server from Debian's zookeeper
// package for tests: a JVM on a free loopback port with a temporary data
// directory, four-letter words on, the admin server off and a short tick so
// that session expiry takes about a second. Options add a super user
// (WithSuperDigest) and a TLS secure client port served by netty (WithTLS,
// with PEM files such as internal/testca makes).
package zktest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/fourletter"
	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/testenv"
)

// TickTime is the server's tick. ZooKeeper grants session timeouts between
// 2 and 600 ticks here, so test sessions can be as short as 200 ms.
const TickTime = 100 * time.Millisecond

// JavaDir is where Debian installs the jars.
const JavaDir = "/usr/share/java"

// startTimeout bounds how long a server may take to answer ruok.
const startTimeout = 60 * time.Second

// Server is one running ZooKeeper server.
type Server struct {
	addr   string
	secure string // secure client port's address, with WithTLS
	dir    string
	cmd    *exec.Cmd
	log    *os.File
	args   []string // java's, to restart it

	ownDir bool // remove dir's parent on Stop (shared server)

	stopOnce sync.Once
	exited   chan struct{}
}

// Start runs a fresh server for t and stops it on t.Cleanup. Without java
// or the zookeeper jars it skips t, or fails it when the CI environment
// variable is set.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	Require(t)
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.tls != nil {
		RequireNetty(t)
	}
	s, err := start(t.TempDir(), cfg)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

var shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Shared returns one server for the whole test binary, started on first
// use. Stop it from TestMain with Main; tests sharing it must use paths of
// their own.
func Shared(t testing.TB) *Server {
	t.Helper()
	Require(t)
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "zktest-")
		if err != nil {
			shared.err = err
			return
		}
		shared.srv, shared.err = start(dir, config{})
		if shared.err != nil {
			_ = os.RemoveAll(dir)
		} else {
			shared.srv.ownDir = true
		}
	})
	if shared.err != nil {
		t.Fatalf("zktest: %v", shared.err)
	}
	return shared.srv
}

// Main runs the tests of m and then stops the shared server, if any. Use
// it as `func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }`.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Stop()
	}
	return code
}

// Available reports whether java and the zookeeper jars are installed, and
// why not.
func Available() error {
	if _, err := exec.LookPath("java"); err != nil {
		return errors.New("java not found on PATH (apt-get install zookeeper)")
	}
	if _, err := os.Stat(filepath.Join(JavaDir, "zookeeper.jar")); err != nil {
		return fmt.Errorf("%s/zookeeper.jar not found (apt-get install zookeeper)", JavaDir)
	}
	return nil
}

// Require skips t (fails it with CI set) when ZooKeeper cannot be run.
func Require(t testing.TB) {
	t.Helper()
	testenv.Require(t, "zktest: ZooKeeper", Available())
}

// Classpath is the server's classpath: zookeeper.jar names its own
// dependencies in its manifest; slf4j-simple gives it a logger.
func Classpath() string {
	return filepath.Join(JavaDir, "zookeeper.jar") + ":" + filepath.Join(JavaDir, "slf4j-simple.jar")
}

func start(dir string, cfg config) (*Server, error) {
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := startOnce(dir, attempt, cfg)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

func startOnce(dir string, attempt int, c config) (*Server, error) {
	port, err := freeport.Port()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	run := filepath.Join(dir, fmt.Sprintf("zk%d", attempt))
	data := filepath.Join(run, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	lines := []string{
		fmt.Sprintf("tickTime=%d", TickTime.Milliseconds()),
		"dataDir=" + data,
		fmt.Sprintf("clientPort=%d", port),
		"clientPortAddress=127.0.0.1",
		"maxSessionTimeout=60000",
		"4lw.commands.whitelist=*",
		"admin.enableServer=false",
		"maxClientCnxns=0",
		"forceSync=no",
	}
	classpath := Classpath()
	var secure string
	if c.tls != nil {
		sport, err := freeport.Port()
		if err != nil {
			return nil, err
		}
		secure = fmt.Sprintf("127.0.0.1:%d", sport)
		if err := c.tls.writeKeyStore(); err != nil {
			return nil, err
		}
		lines = append(lines, fmt.Sprintf("secureClientPort=%d", sport), "secureClientPortAddress=127.0.0.1")
		classpath = NettyClasspath()
	}
	cfg := strings.Join(append(lines, ""), "\n")
	cfgPath := filepath.Join(run, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(run, "zookeeper.log"))
	if err != nil {
		return nil, err
	}
	args := []string{"-Xmx256m", "-XX:+UseSerialGC",
		"-Dzookeeper.admin.enableServer=false",
		"-Dznode.container.checkIntervalMs=500", // empty containers go quickly
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
	}
	args = append(args, c.jvmFlags()...)
	args = append(args, "-cp", classpath, "org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
	s := &Server{addr: addr, secure: secure, dir: run, log: logf, args: args}
	if err := s.launch(); err != nil {
		logf.Close()
		return nil, err
	}
	if err := s.waitReady(startTimeout); err != nil {
		s.Stop()
		return nil, fmt.Errorf("server on %s did not start: %w\n%s", addr, err, s.logTail())
	}
	return s, nil
}

// launch starts the server's JVM.
func (s *Server) launch() error {
	cmd := exec.Command("java", s.args...)
	cmd.Dir = s.dir
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start java: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	return nil
}

// Restart kills the server (SIGKILL, as a crash) and starts it again on
// the same port and data directory, after down (0: at once), and waits
// until it serves. Sessions survive as on a real server: those whose
// clients reconnect within their timeout go on. Not for the Shared server.
func (s *Server) Restart(down time.Duration) error {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	if down > 0 {
		<-time.After(down)
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = s.launch(); err != nil {
			return err
		}
		if err = s.waitReady(startTimeout); err == nil {
			return nil
		}
		// The port may linger a moment after the kill: try again.
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	return fmt.Errorf("server on %s did not restart: %w\n%s", s.addr, err, s.logTail())
}

func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return errors.New("java exited")
		default:
		}
		// ruok answers imok before the server serves requests; srvr
		// names the server's mode only once it does. The secure port, if
		// any, is bound on its own, and may come later.
		if out, err := s.FourLetter("srvr"); err == nil && strings.Contains(out, "Mode: ") && s.secureUp() {
			return nil
		}
		select {
		case <-s.exited:
			return errors.New("java exited")
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("no imok within %v", limit)
}

// secureUp reports whether the secure client port, if the server has
// one, accepts connections (TestStartSecure was refused once, right after
// the plain port answered).
func (s *Server) secureUp() bool {
	if s.secure == "" {
		return true
	}
	c, err := net.DialTimeout("tcp", s.secure, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

func (s *Server) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "zookeeper.log"))
	if err != nil {
		return ""
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Addr is the client address, host:port on loopback.
func (s *Server) Addr() string { return s.addr }

// SecureAddr is the secure client port's address (TLS), host:port on
// loopback, or "" when the server was started without WithTLS.
func (s *Server) SecureAddr() string { return s.secure }

// Servers is the client connection list (one server here).
func (s *Server) Servers() []string { return []string{s.addr} }

// FourLetter sends a four-letter word (ruok, mntr, wchs, cons, …) and
// returns the answer, trimmed.
func (s *Server) FourLetter(cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := fourletter.Ask(ctx, s.addr, cmd)
	return strings.TrimSpace(out), err
}

// Mntr returns the server's mntr figures by name (zk_watch_count, …).
func (s *Server) Mntr() (map[string]string, error) {
	out, err := s.FourLetter("mntr")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewBufferString(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m, nil
}

// Stop kills the server's process group and waits for it to exit. It is
// idempotent.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.cmd.Process != nil {
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
		}
		_ = s.log.Close()
		if s.ownDir {
			_ = os.RemoveAll(filepath.Dir(s.dir))
		}
	})
}
