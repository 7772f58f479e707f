package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/await"
	"github.com/batonhq/baton/internal/pgtest"
)

// AdvisoryKey is what the documented SQL computes, for every spelling.
func TestAdvisoryKeyMatchesSQL(t *testing.T) {
	srv := pgtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connectURL(t, ctx, srv.URL(""), "")
	for _, name := range []string{"x", "/x", "a/b", "/jobs/nightly-report", "é/ü", strings.Repeat("n", 4096)} {
		var got int64
		if err := c.QueryRow(ctx, "SELECT "+AdvisoryKeySQL, name).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := AdvisoryKey(name); got != want {
			t.Errorf("%.20q: SQL %d, AdvisoryKey %d", name, got, want)
		}
	}
	if AdvisoryKey("x") == AdvisoryKey("/x") {
		t.Error(`"x" and "/x" share a key`)
	}
}

// A real session holding pg_advisory_lock on a name's key, and one waiting
// for it, are listed with their pid, application_name, client address and
// start; a lock on another name's key, and one on a pair of 32-bit keys
// equal to this key's halves, are not.
func TestAdvisoryHolders(t *testing.T) {
	srv := pgtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := srv.URL("")
	holder := connectURL(t, ctx, url, "nightly-holder")
	waiter := connectURL(t, ctx, url, "nightly-waiter")
	other := connectURL(t, ctx, url, "other")
	reader := connectURL(t, ctx, url, "reader")
	const name = "jobs/nightly"

	if hs, err := AdvisoryHolders(ctx, reader, name); err != nil || len(hs) != 0 {
		t.Fatalf("free lock: %v, %v; want none", hs, err)
	}
	exec := func(c *pgx.Conn, sql string, args ...any) {
		t.Helper()
		if _, err := c.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(holder, "SELECT pg_advisory_lock("+AdvisoryKeySQL+")", name)
	k := uint64(AdvisoryKey(name))
	exec(other, "SELECT pg_advisory_lock("+AdvisoryKeySQL+")", "jobs/other")
	exec(other, "SELECT pg_advisory_lock($1::int4, $2::int4)", int32(k>>32), int32(k))
	waited := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(ctx, "SELECT pg_advisory_lock("+AdvisoryKeySQL+")", name)
		waited <- err
	}()
	var hs []AdvisoryHolder
	await.Until(t, 10*time.Second, "the waiter to queue", func() bool {
		var err error
		hs, err = AdvisoryHolders(ctx, reader, name)
		return err == nil && len(hs) == 2
	})
	pid := func(c *pgx.Conn) int32 { return int32(c.PgConn().PID()) }
	h, w := hs[0], hs[1]
	if h.PID != pid(holder) || !h.Granted || h.Mode != "ExclusiveLock" || h.Application != "nightly-holder" ||
		h.ClientAddr != "127.0.0.1" || h.User != "postgres" || h.BackendStart.IsZero() || time.Since(h.BackendStart) > time.Minute {
		t.Errorf("holder: %+v (pid %d)", h, pid(holder))
	}
	if w.PID != pid(waiter) || w.Granted || w.Application != "nightly-waiter" {
		t.Errorf("waiter: %+v (pid %d)", w, pid(waiter))
	}
	exec(holder, "SELECT pg_advisory_unlock("+AdvisoryKeySQL+")", name)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	hs, err := AdvisoryHolders(ctx, reader, name)
	if err != nil || len(hs) != 1 || hs[0].PID != pid(waiter) || !hs[0].Granted {
		t.Fatalf("after the hand-over: %+v, %v; want the waiter alone, holding", hs, err)
	}
}

// connectURL connects with application_name app, closed when t ends.
func connectURL(t *testing.T, ctx context.Context, url, app string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if app != "" {
		cfg.RuntimeParams["application_name"] = app
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}
