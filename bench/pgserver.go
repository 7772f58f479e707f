package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/freeport"
)

// startPostgres makes a cluster with Debian's initdb in base/postgres and
// runs its postgres server on a free loopback port, as the postgres user
// when this runs as root (the server refuses root), with pg_stat_statements
// loaded for the probe (tracking the statements inside functions too, to
// count the notifications they send); with fsync (PostgreSQL's default) or without.
func startPostgres(base string, fsync bool) (*server, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(base, fmt.Sprintf("postgres-fsync-%v", fsync))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, and no postgres user to run the server as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		// The server's user must reach its directory through base.
		if err := os.Chmod(base, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	port, err := freeport.Port()
	if err != nil {
		return nil, err
	}
	stop, err := startProcAs(dir, "postgres", cred, filepath.Join(bin, "postgres"), "-D", data, "-p", fmt.Sprint(port),
		"-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", fmt.Sprintf("fsync=%v", fsync), "-c", fmt.Sprintf("full_page_writes=%v", fsync),
		"-c", "max_connections=500", "-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track=all")
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	url := pgURL(addr)
	err = waitFor(60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
		return err
	})
	if err != nil {
		stop()
		return nil, fmt.Errorf("postgres on %s: %w", addr, err)
	}
	return &server{name: "postgres", addr: addr, stop: stop}, nil
}

// pgURL is the bench's URL of the server at addr.
func pgURL(addr string) string {
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable"
}

// pgBinDir finds Debian's per-version binaries, the newest first.
func pgBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no /usr/lib/postgresql/*/bin/initdb (install Debian's postgresql)")
}
