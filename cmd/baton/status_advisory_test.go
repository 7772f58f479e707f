package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/postgres"
)

// On PostgreSQL, `baton status NAME` shows the sessions holding and
// waiting for NAME's advisory lock (postgres.AdvisoryKey, as written:
// "x", "/x" and "a/b" each their own) with their pid, application_name,
// client address and start; --json gives the key. The advisory lock is
// another lock than baton's: a `baton lock` on NAME holds while a session
// holds the advisory lock, and --held answers for baton's lock alone.
// --watch redraws when the advisory lock changes hands (on "x").
func TestStatusPostgresAdvisory(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	url := "postgres://postgres@" + srv.Addr() + "/postgres?sslmode=disable&schema=status_advisory"
	e := env("BATON_STORE=" + url)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i, name := range []string{"x", "/x", "a/b"} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			key := postgres.AdvisoryKey(name)
			holder := sqlSession(t, ctx, srv.URL(""), "nightly-sql")
			if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
				t.Fatal(err)
			}
			waiter := sqlSession(t, ctx, srv.URL(""), "nightly-sql-2")
			waited := make(chan error, 1)
			go func() {
				_, err := waiter.Exec(ctx, "SELECT pg_advisory_lock($1)", key)
				waited <- err
			}()
			rep := waitAdvisoryReport(t, e, name, func(a *advisoryLock) bool { return a != nil && len(a.Sessions) == 2 })
			a := rep.Advisory
			h, w := a.Sessions[0], a.Sessions[1]
			if a.Key != key || h.PID != int32(holder.PgConn().PID()) || !h.Granted || h.Application != "nightly-sql" ||
				h.ClientAddr != "127.0.0.1" || h.BackendStart.IsZero() || w.PID != int32(waiter.PgConn().PID()) || w.Granted {
				t.Fatalf("advisory lock of %q: %+v (key %d)", name, a, key)
			}
			if rep.Held || rep.Holders != 0 {
				t.Fatalf("baton's lock reported held: %+v", rep.Report)
			}
			if _, _, code := run(t, e, "status", "--held", name); code != exitNotHeld {
				t.Fatalf("--held with only the advisory lock held: exit %d, want %d", code, exitNotHeld)
			}
			out, stderr, code := run(t, e, "status", name)
			if code != 0 || !strings.Contains(out, fmt.Sprintf("advisory lock %d (pg_advisory_lock, another lock than baton's): 1 holding, 1 waiting", key)) ||
				!strings.Contains(out, fmt.Sprintf("%d  holding  ExclusiveLock  nightly-sql ", h.PID)) || !strings.Contains(out, "(no nodes)") {
				t.Fatalf("status %s: exit %d, %q %q", name, code, out, stderr)
			}
			// baton's lock is another: it is taken while the advisory
			// lock is held.
			bl := startHeld(t, e, "lock", name)
			rep = waitAdvisoryReport(t, e, name, func(a *advisoryLock) bool { return a != nil })
			if !rep.Held || rep.Holders != 1 {
				t.Fatalf("baton's holder beside the advisory lock: %+v", rep.Report)
			}
			bl.signal(syscall.SIGINT)
			if code := bl.wait(15 * time.Second); code != 0 {
				t.Fatalf("baton lock exit %d", code)
			}

			if i > 0 { // the spellings differ in their key only
				if _, err := holder.Exec(ctx, "SELECT pg_advisory_unlock($1)", key); err != nil {
					t.Fatal(err)
				}
				if err := <-waited; err != nil {
					t.Fatal(err)
				}
				return
			}
			// --watch redraws as the advisory lock changes hands, and
			// once it is free.
			wp := start(t, e, "status", "--watch", "--json", name)
			wp.waitOutput(fmt.Sprintf(`"pid":%d,"mode":"ExclusiveLock","granted":false`, w.PID), 15*time.Second)
			if _, err := holder.Exec(ctx, "SELECT pg_advisory_unlock($1)", key); err != nil {
				t.Fatal(err)
			}
			if err := <-waited; err != nil {
				t.Fatal(err)
			}
			wp.waitOutput(fmt.Sprintf(`"pid":%d,"mode":"ExclusiveLock","granted":true`, w.PID), 15*time.Second)
			if _, err := waiter.Exec(ctx, "SELECT pg_advisory_unlock($1)", key); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				lines := strings.Split(strings.TrimSpace(wp.stdout.String()), "\n")
				if !strings.Contains(lines[len(lines)-1], "advisory_lock") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("--watch did not redraw once the advisory lock was free: %q", wp.stdout.String())
				}
				<-time.After(20 * time.Millisecond) // poll interval
			}
			wp.signal(syscall.SIGINT)
			if code := wp.wait(10 * time.Second); code != 0 {
				t.Fatalf("status --watch exit %d", code)
			}
		})
	}
}

// sqlSession is a plain PostgreSQL session with application_name app,
// closed when t ends.
func sqlSession(t *testing.T, ctx context.Context, url, app string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = app
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// waitAdvisoryReport runs `status --json NAME` until ok(its advisory
// lock), for 15 s at the most.
func waitAdvisoryReport(t *testing.T, e []string, name string, ok func(*advisoryLock) bool) statusReport {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, stderr, code := run(t, e, "status", "--json", name)
		var rep statusReport
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
			t.Fatalf("status --json %s: exit %d %q %q", name, code, out, stderr)
		}
		if ok(rep.Advisory) {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("status --json %s: %s", name, out)
		}
		<-time.After(50 * time.Millisecond) // poll interval
	}
}
