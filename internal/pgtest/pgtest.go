// Package pgtest runs a real PostgreSQL server from Debian's postgresql
// package for tests: a cluster made by initdb in a temporary directory,
// started and stopped by pg_ctl, listening on a free loopback port (and a
// unix socket in the same directory), with fsync off for speed and trust
// authentication for the superuser "postgres".
//
// PostgreSQL refuses to run as root: when the test runs as root, the
// directory is given to the "postgres" system user (which the package
// creates) and initdb and pg_ctl run as that user.
//
// The binaries are looked for under /usr/lib/postgresql/<version>/bin
// (the newest version first), then on PATH. With the environment variable
// CI set, missing binaries fail the test; otherwise it is skipped.
package pgtest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/testenv"
)

// startTimeout bounds how long the server may take to accept connections
// after pg_ctl starts it (a restart replays the WAL first).
const startTimeout = 60 * time.Second

// Server is one PostgreSQL cluster.
type Server struct {
	dir  string // owned by the server's user; holds data/, the socket, the log
	bin  string // directory of initdb, pg_ctl, psql
	port int
	cred *syscall.Credential // the postgres user's, when running as root

	mu      sync.Mutex
	running bool
	dbs     atomic.Int64
}

// BinDir returns the directory holding initdb, pg_ctl and psql, failing
// the test under CI and skipping it otherwise when there is none.
func BinDir(t testing.TB) string {
	t.Helper()
	dir, err := binDir()
	testenv.Require(t, "pgtest: initdb and pg_ctl (install Debian's postgresql)", err)
	return dir
}

func binDir() (string, error) {
	// Debian installs the binaries per major version, outside PATH.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	p, err := exec.LookPath("initdb")
	if err != nil {
		return "", errors.New("no /usr/lib/postgresql/*/bin/initdb and no initdb on PATH")
	}
	p, err = filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	d := filepath.Dir(p)
	if !isExec(filepath.Join(d, "pg_ctl")) {
		return "", fmt.Errorf("no pg_ctl beside %s", p)
	}
	return d, nil
}

// version is the major version in /usr/lib/postgresql/<version>/bin.
func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Start makes and starts a cluster of t's own, stopped and removed by
// t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := start(BinDir(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(s.remove)
	return s
}

var shared struct {
	mu  sync.Mutex
	srv *Server
}

// Shared returns the one cluster of the test binary, started on first use
// and stopped by StopShared, which TestMain must call. Tests sharing it
// work in databases or schemas of their own (Database), and must not stop
// or restart it.
func Shared(t testing.TB) *Server {
	t.Helper()
	bin := BinDir(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil {
		s, err := start(bin)
		if err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		shared.srv = s
	}
	return shared.srv
}

// StopShared stops the cluster Shared started, if any, and removes its
// directory. Call it from TestMain after m.Run.
func StopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv != nil {
		shared.srv.remove()
		shared.srv = nil
	}
}

func start(bin string) (*Server, error) {
	s := &Server{bin: bin}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s.dir = dir
	if os.Geteuid() == 0 {
		if s.cred, err = postgresUser(); err == nil {
			err = os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid))
		}
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	if out, err := s.run("initdb", "-D", s.data(), "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	for range 5 { // a free port may be taken between probe and bind
		if s.port, err = freeport.Port(); err != nil {
			continue
		}
		if err = s.writeConfig(); err != nil {
			break
		}
		if err = s.Start(); err == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// postgresUser is the credential of the postgres system user, which
// Debian's package creates.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and no postgres user to run the server as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("postgres user: uid %q gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// writeConfig appends the test settings to postgresql.auto.conf, so that
// every start (and pg_ctl restart) uses them. fsync is off, which loses
// nothing when only the server process dies (the kernel keeps what it
// wrote); synchronous_commit stays on, since an immediate stop would lose
// commits a client was told of.
func (s *Server) writeConfig() error {
	conf := fmt.Sprintf(`
# pgtest
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
fsync = off
full_page_writes = off
max_connections = 400
shared_buffers = 32MB
dynamic_shared_memory_type = mmap
max_locks_per_transaction = 256
log_min_messages = warning
logging_collector = off
`, s.port, s.dir)
	return s.appendConf(conf)
}

// run runs one of the cluster's binaries as the server's user, in dir.
func (s *Server) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "PGTZ=UTC")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
		cmd.Env = append(cmd.Env, "HOME="+s.dir, "USER=postgres", "LOGNAME=postgres")
	}
	return cmd.CombinedOutput()
}

func (s *Server) logFile() string { return filepath.Join(s.dir, "server.log") }

// Start starts the server again after Stop (pg_ctl start, waiting until it
// accepts connections).
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return nil
	}
	out, err := s.run("pg_ctl", "start", "-D", s.data(), "-l", s.logFile(), "-w",
		"-t", strconv.Itoa(int(startTimeout/time.Second)))
	if err != nil {
		return fmt.Errorf("pg_ctl start on port %d: %v: %s%s", s.port, err, out, s.logTail())
	}
	s.running = true
	return nil
}

// Stop stops the server at once (pg_ctl stop -m immediate): every
// connection is dropped, no checkpoint is written, and the next start
// recovers from the WAL, as after a crash.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	out, err := s.run("pg_ctl", "stop", "-D", s.data(), "-m", "immediate", "-w")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	s.running = false
	return nil
}

// Restart is pg_ctl restart -m immediate: a crash and recovery, on the
// same port and data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.Stop(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

func (s *Server) remove() {
	_ = s.Stop()
	_ = os.RemoveAll(s.dir)
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logFile())
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	if len(b) == 0 {
		return ""
	}
	return "\nserver log: " + strings.TrimSpace(string(b))
}

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// Addr is "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// SocketDir is the directory of the server's unix socket.
func (s *Server) SocketDir() string { return s.dir }

// URL is a postgres:// URL of database db (default "postgres") as the
// superuser, over TCP without TLS.
func (s *Server) URL(db string) string {
	if db == "" {
		db = "postgres"
	}
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: s.Addr(), Path: "/" + db,
		RawQuery: "sslmode=disable"}
	return u.String()
}

// SQL runs statements in database db with psql, failing t on error, and
// returns psql's unaligned output.
func (s *Server) SQL(t testing.TB, db, sql string) string {
	t.Helper()
	out, err := s.psql(db, sql)
	if err != nil {
		t.Fatalf("pgtest: psql %q: %v: %s", sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (s *Server) psql(db, sql string) ([]byte, error) {
	if db == "" {
		db = "postgres"
	}
	cmd := exec.Command(filepath.Join(s.bin, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", "postgres", "-d", db, "-c", sql)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10", "PGSSLMODE=disable")
	return cmd.CombinedOutput()
}

// Database creates an empty database for t alone and returns its name;
// t.Cleanup drops it (with any connections left to it).
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.dbs.Add(1))
	s.SQL(t, "", "CREATE DATABASE "+name)
	t.Cleanup(func() { _, _ = s.psql("", "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return name
}

// Secure turns TLS on with the given certificate and key (PEM), and makes
// a role user with password who may connect over TLS only, with
// scram-sha-256, and create schemas in the database postgres; then it
// restarts the server. The superuser keeps its trusted connections.
func (s *Server) Secure(t testing.TB, certFile, keyFile, user, password string) {
	t.Helper()
	for _, f := range []struct{ from, to string }{{certFile, "server.crt"}, {keyFile, "server.key"}} {
		b, err := os.ReadFile(f.from)
		if err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		p := filepath.Join(s.data(), f.to)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		if s.cred != nil {
			if err := os.Chown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				t.Fatalf("pgtest: %v", err)
			}
		}
	}
	if err := s.appendConf("\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\npassword_encryption = 'scram-sha-256'\n"); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	hba := filepath.Join(s.data(), "pg_hba.conf")
	old, err := os.ReadFile(hba)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	lines := fmt.Sprintf("hostssl all %[1]s 127.0.0.1/32 scram-sha-256\nhost all %[1]s 127.0.0.1/32 reject\nlocal all %[1]s reject\n", user)
	if err := os.WriteFile(hba, append([]byte(lines), old...), 0o600); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	s.Restart(t)
	s.SQL(t, "", fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'; GRANT CREATE ON DATABASE postgres TO %[1]s", user, password))
}

// appendConf appends settings to postgresql.auto.conf.
func (s *Server) appendConf(conf string) error {
	f, err := os.OpenFile(filepath.Join(s.data(), "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
