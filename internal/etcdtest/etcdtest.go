// Package etcdtest starts real etcd servers for tests: baton's embedded
// etcd (go.etcd.io/etcd/server/v3/embed) in a process of its own, built
// without the race detector, on a free loopback port and a temp data dir.
// A separate process also lets fault tests kill, pause and restart it.
package etcdtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a running test etcd.
type Server struct {
	bin, dataDir string
	opts         Options

	mu   sync.Mutex
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// binary builds the server command once per test process, in this
// package's own module (it needs the etcd server, which the modules whose
// tests use this package do not require).
func binary() (string, error) {
	build.once.Do(func() {
		_, file, _, ok := runtime.Caller(0)
		if !ok {
			build.err = errors.New("etcdtest: cannot locate the etcdserver source")
			return
		}
		var err error
		if build.dir, err = os.MkdirTemp("", "etcdtest-"); err != nil {
			build.err = err
			return
		}
		build.bin = filepath.Join(build.dir, "etcdserver")
		// go test puts its own go command first on PATH.
		cmd := exec.Command("go", "build", "-o", build.bin, ".")
		cmd.Dir = filepath.Join(filepath.Dir(file), "etcdserver")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("etcdtest: build etcdserver: %w\n%s", err, out)
		}
	})
	return build.bin, build.err
}

// Options configure a test server's security (see embedded.Config): TLS
// with a server certificate, client certificates signed by ClientCAFile,
// authentication with user root and RootPassword.
type Options struct {
	CertFile, KeyFile, ClientCAFile string
	RootPassword                    string
	AuthTokenTTL                    time.Duration
}

// Start runs a fresh server and stops it when the test ends.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith runs a fresh server with o and stops it when the test ends.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := NewWith(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// New runs a server on dataDir; the caller stops it.
func New(dataDir string) (*Server, error) { return NewWith(dataDir, Options{}) }

// NewWith runs a server with o on dataDir; the caller stops it.
func NewWith(dataDir string, o Options) (*Server, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dataDir: dataDir, opts: o}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return s, s.start(ctx, "127.0.0.1:0")
}

func (s *Server) start(ctx context.Context, listen string) error {
	cmd := exec.Command(s.bin, "-data-dir", s.dataDir, "-listen", listen,
		"-cert", s.opts.CertFile, "-key", s.opts.KeyFile, "-client-ca", s.opts.ClientCAFile,
		"-auth-token-ttl", s.opts.AuthTokenTTL.String())
	// The password goes through the environment, not the command line.
	cmd.Env = append(os.Environ(), "ETCDSERVER_ROOT_PASSWORD="+s.opts.RootPassword)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("etcdtest: start: %w", err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- a
			}
		}
		close(ready)
	}()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case a, ok := <-ready:
		if !ok {
			<-done
			return errors.New("etcdtest: server exited before serving")
		}
		s.mu.Lock()
		s.addr, s.cmd, s.done = a, cmd, done
		s.mu.Unlock()
		return nil
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("etcdtest: server not ready: %w", ctx.Err())
	}
}

// Addr is the client address, host:port on loopback.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Endpoints is the client URL list (https:// with TLS).
func (s *Server) Endpoints() []string {
	if s.opts.CertFile != "" {
		return []string{"https://" + s.Addr()}
	}
	return []string{"http://" + s.Addr()}
}

// Stop kills the server (SIGKILL: no goodbye to clients) and waits for
// it. It is idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// Restart stops the server and starts it again on the same data dir and
// address. ctx bounds the wait for the new server to serve.
func (s *Server) Restart(ctx context.Context) error {
	s.Stop()
	return s.start(ctx, s.Addr())
}

// Pause stops the server process (SIGSTOP) until Resume.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = syscall.Kill(s.cmd.Process.Pid, sig)
	}
}
