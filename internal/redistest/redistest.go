// Package redistest starts real redis-server processes (Debian's package,
// found on PATH) on free loopback ports for tests. Each server runs in its
// own temporary directory without persistence (save "" and appendonly no),
// so a restart comes back empty, and is stopped when the test ends.
//
// With the environment variable CI set, a missing redis-server fails the
// test; otherwise the test is skipped with a message.
package redistest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/testca"
	"github.com/batonhq/baton/internal/testenv"
)

// startTimeout bounds how long one server may take to accept connections.
const startTimeout = 10 * time.Second

// Config adds authentication to a server. The zero Config starts an open
// server.
type Config struct {
	// Password, if set, is the default user's password (requirepass).
	Password string
	// Users are ACL user rules, one per user, as in redis.conf after the
	// "user" keyword, e.g. "alice on >secret ~* &* +@all".
	Users []string
	// TLS makes the server accept only TLS connections, with a certificate
	// for 127.0.0.1 signed by a throwaway CA (see Server.CAFile).
	TLS bool
	// Conf are more redis.conf lines ("replicaof 127.0.0.1 6379").
	Conf []string
	// Cluster starts the server in cluster mode (see StartCluster).
	Cluster bool

	sentinel bool // run redis-sentinel: ready at "+monitor"
}

// tlsFiles are a throwaway CA (internal/testca) and a server certificate
// for 127.0.0.1 and localhost signed by it, as PEM files.
type tlsFiles struct {
	CA, Cert, Key string
}

// Server is one redis-server process.
type Server struct {
	t    testing.TB
	cfg  Config
	dir  string
	port int
	tls  tlsFiles

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{} // closed when cmd has exited
	log   *logWriter
	ready time.Time // when the process last said it accepts connections
}

// Binary returns the path of redis-server, failing the test under CI and
// skipping it otherwise when it is missing.
func Binary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("redis-server")
	testenv.Require(t, "redistest: redis-server (install Debian's redis-server)", err)
	return p
}

// Start starts one server and registers its shutdown with t.Cleanup.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	var files tlsFiles
	if cfg.TLS {
		files = newTLSFiles(t)
	}
	return startWith(t, cfg, files)
}

// newTLSFiles makes a throwaway CA and a certificate for 127.0.0.1.
func newTLSFiles(t testing.TB) tlsFiles {
	ca := testca.New(t, "redistest") // the name goes into a path redis.conf takes unquoted
	leaf := ca.Issue(t, "127.0.0.1")
	return tlsFiles{CA: ca.CertFile, Cert: leaf.CertFile, Key: leaf.KeyFile}
}

// startWith starts one server with the given TLS files (if cfg.TLS).
func startWith(t testing.TB, cfg Config, files tlsFiles) *Server {
	t.Helper()
	bin := Binary(t)
	s := &Server{t: t, cfg: cfg, dir: t.TempDir(), tls: files}
	var err error
	for range 5 { // a free port may be taken between probe and bind
		s.port, err = freeport.Port()
		if err != nil {
			continue
		}
		if err = s.start(bin); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Kill)
	return s
}

// StartN starts n independent servers with the same Config.
func StartN(t testing.TB, n int, cfg Config) []*Server {
	t.Helper()
	out := make([]*Server, n)
	for i := range out {
		out[i] = Start(t, cfg)
	}
	return out
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is a redis:// URL for the server (rediss:// with TLS), without
// credentials.
func (s *Server) URL() string {
	if s.cfg.TLS {
		return "rediss://" + s.Addr()
	}
	return "redis://" + s.Addr()
}

// CAFile is the PEM file of the CA that signed a TLS server's certificate
// ("" without TLS).
func (s *Server) CAFile() string { return s.tls.CA }

// Running reports whether the process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Kill stops the server at once (SIGKILL) and waits for it to exit. Killing
// a stopped server does nothing.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

// Pause stops the process (SIGSTOP) without closing its connections; Resume
// continues it.
func (s *Server) Pause() { s.signalOnly(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signalOnly(syscall.SIGCONT) }

// Restart kills the server if it runs and starts it again on the same port.
// Without persistence it comes back empty, with a new run_id.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	var err error
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		if err = s.start(Binary(s.t)); err == nil {
			return
		}
		if !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	s.t.Fatalf("redistest: restart on port %d: %v", s.port, err)
}

func (s *Server) signalOnly(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	<-done
}

func (s *Server) writeConfig() (string, error) {
	var b strings.Builder
	if s.cfg.TLS {
		fmt.Fprintf(&b, "port 0\ntls-port %d\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\ntls-auth-clients no\n",
			s.port, s.tls.Cert, s.tls.Key, s.tls.CA)
	} else {
		fmt.Fprintf(&b, "port %d\n", s.port)
	}
	fmt.Fprintf(&b, "bind 127.0.0.1\ndir %s\n", s.dir)
	b.WriteString("save \"\"\nappendonly no\ndaemonize no\nprotected-mode no\nloglevel notice\nlogfile \"\"\n")
	if s.cfg.Password != "" {
		fmt.Fprintf(&b, "requirepass %s\n", s.cfg.Password)
	}
	if s.cfg.Cluster && s.cfg.TLS {
		b.WriteString("tls-cluster yes\ntls-replication yes\n")
	}
	if s.cfg.Cluster {
		fmt.Fprintf(&b, "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout %d\n", NodeTimeout.Milliseconds())
	}
	for _, u := range s.cfg.Users {
		fmt.Fprintf(&b, "user %s\n", u)
	}
	for _, l := range s.cfg.Conf {
		b.WriteString(l + "\n")
	}
	p := filepath.Join(s.dir, "redis.conf")
	return p, os.WriteFile(p, []byte(b.String()), 0o600)
}

func (s *Server) start(bin string) error {
	conf, err := s.writeConfig()
	if err != nil {
		return err
	}
	lw := &logWriter{ready: make(chan struct{}), mark: "Ready to accept connections"}
	if s.cfg.sentinel {
		lw.mark = "+monitor master"
	}
	cmd := exec.Command(bin, conf)
	cmd.Stdout, cmd.Stderr = lw, lw
	cmd.Dir = s.dir
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case <-lw.ready:
	case <-done:
		return fmt.Errorf("redis-server on port %d exited: %s", s.port, lw.tail())
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("redis-server on port %d not ready after %v: %s", s.port, startTimeout, lw.tail())
	}
	s.mu.Lock()
	s.cmd, s.done, s.log, s.ready = cmd, done, lw, time.Now()
	s.mu.Unlock()
	return nil
}

// WaitUp waits until the server has been up for d (since its last
// start) and a second more, so that a client connecting afterwards reads
// an uptime of at least d plus a second: baton's restart guard holds back
// every lock of ttl d on a server up for less, and takes an uptime in
// whole seconds to be up to a second more than the time up (see
// redis.Client.RestartGuard). A client connected earlier keeps the start
// it read then; wait before dialing.
func (s *Server) WaitUp(d time.Duration) {
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	// INFO's uptime_in_seconds is whole seconds, counted from before the
	// server said it was ready: once d rounded up to seconds has passed
	// since then, it is at least d.
	up := d.Truncate(time.Second)
	if up < d {
		up += time.Second
	}
	<-time.After(time.Until(ready.Add(up + time.Second + 100*time.Millisecond)))
}

// logWriter keeps the end of the server's log and closes ready when the
// server says it accepts connections.
type logWriter struct {
	mu    sync.Mutex
	buf   []byte
	seen  bool
	mark  string // the log line that says the server is ready
	ready chan struct{}
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if !w.seen && bytes.Contains(w.buf, []byte(w.mark)) {
		w.seen = true
		close(w.ready)
	}
	if len(w.buf) > 8<<10 {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-4<<10:]...)
	}
	return len(p), nil
}

func (w *logWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf
	if len(b) > 1024 {
		b = b[len(b)-1024:]
	}
	return strings.TrimSpace(string(b))
}

// shared are the servers Shared started, by pool name.
var shared struct {
	mu       sync.Mutex
	pools    map[string][]*Server
	stop     []*Server
	cleanups []func() // of SharedSentinel and SharedCluster
}

// Shared returns the n servers of the named pool, one set for the whole
// test binary (zero Config, no persistence), started on first use and
// stopped by StopShared, which TestMain must call. Tests sharing them
// use names of their own, and must not kill or restart them. A pool is a
// set of independent servers (Redlock's masters: Shared(t, "redlock", 3));
// asking a pool for more servers than it has starts the rest.
func Shared(t testing.TB, pool string, n int) []*Server {
	t.Helper()
	bin := Binary(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.pools == nil {
		shared.pools = map[string][]*Server{}
	}
	for len(shared.pools[pool]) < n {
		s := &Server{t: t, dir: ""}
		dir, err := os.MkdirTemp("", "redistest-")
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s.dir = dir
		for range 5 { // a free port may be taken between probe and bind
			if s.port, err = freeport.Port(); err != nil {
				continue
			}
			if err = s.start(bin); err == nil {
				break
			}
		}
		if err != nil {
			_ = os.RemoveAll(dir)
			t.Fatalf("redistest: %v", err)
		}
		shared.pools[pool] = append(shared.pools[pool], s)
		shared.stop = append(shared.stop, s)
	}
	return shared.pools[pool][:n]
}

// StopShared kills the servers Shared, SharedSentinel and SharedCluster
// started and removes their directories. Call it from TestMain after
// m.Run.
func StopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for _, s := range shared.stop {
		s.Kill()
		_ = os.RemoveAll(s.dir)
	}
	for i := len(shared.cleanups) - 1; i >= 0; i-- { // last started, first stopped
		shared.cleanups[i]()
	}
	shared.pools, shared.stop, shared.cleanups = nil, nil, nil
}
