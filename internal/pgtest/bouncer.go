package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/freeport"
	"github.com/batonhq/baton/internal/testenv"
)

// Bouncer is a PgBouncer in front of a Server, on a free loopback port.
type Bouncer struct {
	port int
	mode string
}

// StartBouncer runs Debian's pgbouncer in front of s, in pool mode mode
// ("session", "transaction" or "statement"), for every database, with
// trust authentication and the extra settings given ("name = value"
// lines of its [pgbouncer] section); t.Cleanup stops it. PgBouncer refuses to run as
// root, so it runs as the server's user. With CI set, a missing pgbouncer
// fails the test; otherwise it is skipped.
func (s *Server) StartBouncer(t testing.TB, mode string, extra ...string) *Bouncer {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr == nil {
			bin, err = "/usr/sbin/pgbouncer", nil
		}
	}
	testenv.Require(t, "pgtest: pgbouncer (install Debian's pgbouncer)", err)
	dir, err := os.MkdirTemp("", "pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if s.cred != nil {
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	users := filepath.Join(dir, "users.txt")
	if err := os.WriteFile(users, []byte(`"postgres" ""`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	b := &Bouncer{mode: mode}
	for range 5 { // a free port may be taken between probe and bind
		if b.port, err = freeport.Port(); err != nil {
			continue
		}
		ini := filepath.Join(dir, "pgbouncer.ini")
		conf := fmt.Sprintf(`[databases]
* = host=127.0.0.1 port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
max_client_conn = 500
default_pool_size = 20
ignore_startup_parameters = extra_float_digits,options
logfile = %s
%s
`, s.port, b.port, users, mode, filepath.Join(dir, "pgbouncer.log"), strings.Join(extra, "\n"))
		if err := os.WriteFile(ini, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(bin, ini)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: s.cred}
		if err = cmd.Start(); err != nil {
			t.Fatalf("pgtest: pgbouncer: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if err = waitListening(b.Addr(), exited); err == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGINT)
				select {
				case <-exited:
				case <-time.After(5 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
			})
			return b
		}
		_ = cmd.Process.Kill()
		<-exited
	}
	log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
	t.Fatalf("pgtest: pgbouncer did not start: %v: %s", err, log)
	return nil
}

// waitListening waits until addr accepts connections, or the process
// exits, for 30 s at most.
func waitListening(addr string, exited <-chan error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("pgbouncer exited: %v", err)
		case <-ctx.Done():
			return errors.New("pgbouncer: not listening after 30s")
		case <-tick.C:
		}
	}
}

// Addr is "127.0.0.1:PORT".
func (b *Bouncer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// URL is a postgres:// URL of database db (default "postgres") through
// the bouncer, as the superuser, without TLS.
func (b *Bouncer) URL(db string) string {
	if db == "" {
		db = "postgres"
	}
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: b.Addr(), Path: "/" + db,
		RawQuery: "sslmode=disable"}
	return u.String()
}
